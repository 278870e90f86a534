/** The `requestId` config: whether a client's own X-Request-Id is kept. */
import { Type, type Static } from '@sinclair/typebox';

export const RequestIdConfigSchema = Type.Object(
  {
    acceptFromClient: Type.Boolean({
      default: true,
      description:
        "Keep a well-formed X-Request-Id sent by the client: echoed and sent upstream, and logged as clientRequestId beside the gateway's own requestId.",
    }),
  },
  { additionalProperties: false, default: {}, description: 'Request id stage.' },
);
export type RequestIdConfig = Static<typeof RequestIdConfigSchema>;
