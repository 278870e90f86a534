/** The `admin` config: the admin listener's readiness checks and stage timing. */
import { Type, type Static } from '@sinclair/typebox';

export const AdminConfigSchema = Type.Object(
  {
    readinessTimeoutMs: Type.Integer({
      minimum: 1,
      default: 1000,
      description: 'Time each readiness check (upstream connect, later Redis and JWKS) may take.',
    }),
    allowedHosts: Type.Array(
      Type.String({ pattern: '^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$' }),
      {
        default: [],
        description:
          'Host names (`name`, any port; `name:port`, that port) the admin listener answers /readyz, /metrics and the dashboard to, besides loopback names and its own address: the name Prometheus scrapes it by. Any other Host gets 403 (a DNS-rebinding page would read them). /healthz answers every Host.',
      },
    ),
    stageTiming: Type.Boolean({
      default: true,
      description:
        "Each pipeline stage's own time per request in /metrics (portico_stage_duration_seconds{stage}); " +
        'its cost is a row of npm run bench.',
    }),
  },
  { additionalProperties: false, default: {}, description: 'Admin listener (port from ADMIN_PORT).' },
);
export type AdminConfig = Static<typeof AdminConfigSchema>;
