/** better-sqlite3 ships no types: Sqlite.ts declares the few calls it makes. */
declare module "better-sqlite3" {
  const Database: new (filename: string) => unknown
  export default Database
}
