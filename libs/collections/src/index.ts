export { LruMap } from './lru-map';
