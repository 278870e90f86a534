/**
 * `npm run -s check -- [FILE]`: the gateway's config file and environment judged without
 * starting anything; exit 0 valid, 1 invalid, 2 usage (gateway/check.ts).
 */
import { runCheck } from '../gateway/check.ts';

process.exitCode = runCheck(process.argv.slice(2), process.env);
