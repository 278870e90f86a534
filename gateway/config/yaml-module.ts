/**
 * The YAML parser, loaded the first time a config file is read rather than with the config
 * module: a start without a config file (`npm start` as the README shows it) never needs it, and
 * loading it is a few percent of a warm start's main thread. Synchronous, through `require`, so
 * that loading a config stays synchronous.
 */
import { createRequire } from 'node:module';
import type * as YamlModule from 'yaml';

type Yaml = typeof YamlModule;

let loaded: Yaml | undefined;

export function yaml(): Yaml {
  loaded ??= createRequire(import.meta.url)('yaml') as Yaml;
  return loaded;
}
