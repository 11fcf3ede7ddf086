// The hot routes' ends in a front (http/hot-route.ts): v2's predicts and the OIP REST infer, built
// from plain data on the main thread and on each front thread alike.
import { eitherHotRoute, type HotRoutes, type HotRoutesData } from './http/hot-route';
import { hotInferRoutes } from './oip/hot-infer';
import { hotRoutes } from './v2/hot-predict';

export function frontHotRoutes(data: HotRoutesData): HotRoutes {
  return eitherHotRoute([hotRoutes(data), hotInferRoutes()]);
}
