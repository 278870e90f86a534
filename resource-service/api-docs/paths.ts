/**
 * The OpenAPI `paths` object, derived from the route table: one Path Item per path, its shared
 * parameters first, then one operation per method in the order the table declares them.
 */
import type { Resource } from '../routes/route.ts';
import type { Json } from '../openapi/components.ts';

export function pathsOf(table: readonly Resource[]): Json {
  const paths: Json = {};
  for (const resource of table) {
    if (Object.hasOwn(paths, resource.path))
      throw new Error(`${resource.path} is declared twice in the route table`);
    const item: Json = resource.parameters === undefined ? {} : { parameters: resource.parameters };
    for (const { method, doc } of resource.operations) item[method.toLowerCase()] = doc;
    paths[resource.path] = item;
  }
  return paths;
}
