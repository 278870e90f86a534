/**
 * The YAML parser, loaded the first time a config file is read rather than with the config
 * module: a start without a config file (`npm start` as the README shows it) never needs it, and
 * loading it is a few percent of a warm start's main thread. Synchronous, through `require`, so
 * that loading a config stays synchronous.
 */
import type * as YamlModule from 'yaml';
import { lazyModule } from '../../shared/lazy-module.ts';

export const yaml = lazyModule<typeof YamlModule>('yaml');
