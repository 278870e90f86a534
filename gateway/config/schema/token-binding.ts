/**
 * A route's `tokenBinding`: whether its callers must prove they hold what their access token is
 * bound to (sender-constrained tokens), and whether DPoP proofs must carry a server nonce.
 * A bound token is always checked, on every route; this only makes binding required.
 */
import { Type, type Static } from '@sinclair/typebox';

export const TokenBindingSchema = Type.Object(
  {
    require: Type.Optional(
      Type.Unsafe<'dpop' | 'certificate'>({
        type: 'string',
        enum: ['dpop', 'certificate'],
        description:
          '`dpop`: only DPoP-bound tokens presented with a proof (RFC 9449); `certificate`: only tokens bound to the client certificate of the connection (RFC 8705, needs `listener.tls.requestClientCertificates`). Unset: bearer tokens too; a bound token is checked either way.',
      }),
    ),
    dpopNonce: Type.Optional(
      Type.Boolean({
        description:
          'DPoP proofs must carry a nonce this gateway issued (`DPoP-Nonce`, RFC 9449 §8): a proof made ahead of time, by a client whose key was stolen, does not work. Costs a client one extra round trip (`use_dpop_nonce`) at its first call, or after a pause of more than half `auth.dpop.nonceLifetimeSeconds`: in steady use the answers carry the next nonce ahead of expiry.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "Sender-constrained tokens on this route: the parent's when unset (docs/identity-provider.md).",
  },
);

export type TokenBinding = Static<typeof TokenBindingSchema>;
