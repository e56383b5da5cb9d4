/** A platform user's role in a Workspace, as `platform-user create --role` takes it. */
export type Role = "owner" | "admin" | "member"
export const ROLES: ReadonlyArray<Role> = ["owner", "admin", "member"]
