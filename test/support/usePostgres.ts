/** A test file's PostgreSQL (postgres.ts), as vitest hooks. */
import { afterAll, beforeAll } from "vitest"
import { startPostgres, type TestPostgres } from "./postgres.js"

/**
 * A PostgreSQL for the test file that calls it: started before its tests, stopped after;
 * `url()` is its database's URL.
 */
export const usePostgres = (): { readonly url: () => string } => {
  let pg: TestPostgres | undefined
  beforeAll(async () => {
    pg = await startPostgres()
  }, 60_000)
  afterAll(async () => {
    await pg?.stop()
  }, 30_000)
  return {
    url: () => {
      if (pg === undefined) throw new Error("the test PostgreSQL has not started")
      return pg.url
    }
  }
}
