/** What the service's pipeline has established about a request before a route handles it. */
import type { Request } from 'polka';
import type { Principal } from '../../shared/principal.ts';

export interface ServiceRequest extends Request {
  requestId: string;
  principal: Principal;
}
