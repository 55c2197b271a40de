import { InitialSchema1764460800000 } from './1764460800000-initial-schema';

/** Every migration, oldest first. Listed explicitly so ts-jest and the compiled build load the same set. */
export const MIGRATIONS = [InitialSchema1764460800000];
