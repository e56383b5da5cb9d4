import { Effect } from "effect"
import { decodeJsonBody, decodeParams, decodeQuery, json, route } from "../../http/route.js"
import { Tenancy } from "../../tenancy/service.js"
import { withCaller } from "../auth/service.js"
import { withIdempotency } from "../http/idempotency.js"
import { withEtag } from "../http/etag.js"
import { pageOf, parsePage } from "../http/pagination.js"
import type { DomainRow } from "./repo.js"
import { CreateDomainBody, Deleted, Domain, DomainList, DomainParams, ListDomainsQuery, UpdateDomainBody } from "./schema.js"
import * as service from "./service.js"
import { challengeName } from "./validation.js"

const tags = ["Domains"]

export const presentDomain = (row: DomainRow): typeof Domain.Type => ({
  id: row.id,
  environment_id: row.environment_id,
  hostname: row.hostname,
  rp_enabled: row.rp_enabled,
  status: row.status,
  validation_errors: row.validation_errors,
  verification: { type: "TXT", name: challengeName(row.hostname), value: row.verification_token },
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
})

const one = (row: DomainRow, status = 200) =>
  withEtag(json(presentDomain(row), status, status === 201 ? { location: `/v1/domains/${row.id}` } : undefined), row.id, row.version)

/**
 * Runs a write that may move the Interaction Domain, then drops this replica's cached
 * Environment once the transaction has committed (other replicas follow within 5 s).
 */
const committedThenForget = <E, R>(environmentOf: Effect.Effect<string | undefined, never, R>, write: Effect.Effect<any, E, R>) =>
  Effect.gen(function* () {
    const response = yield* withIdempotency(write)
    const environmentId = yield* environmentOf
    if (environmentId !== undefined) (yield* Tenancy).forgetEnvironment(environmentId)
    return response
  })

export const domainRoutes = [
  route("GET", "/v1/domains", withCaller("domains:read", Effect.gen(function* () {
    const query = yield* decodeQuery(ListDomainsQuery)
    const page = yield* parsePage(query)
    const rows = yield* service.listDomains(query, page)
    return json(pageOf(rows, page, (r) => r.id, presentDomain))
  })), { summary: "List the custom Domains of an Environment", tags, scope: "domains:read", query: ListDomainsQuery, response: DomainList }),

  route("POST", "/v1/domains", withCaller("domains:write", Effect.gen(function* () {
    const body = yield* decodeJsonBody(CreateDomainBody)
    return yield* withIdempotency(Effect.map(service.createDomain(body), (row) => one(row, 201)))
  })), {
    summary: "Register a custom Domain (status pending; publish the verification TXT record, then retry-validation)",
    tags, scope: "domains:write", body: CreateDomainBody, response: Domain, status: 201, idempotent: true,
  }),

  route("GET", "/v1/domains/:domainId", withCaller("domains:read", Effect.gen(function* () {
    const { domainId } = yield* decodeParams(DomainParams)
    return one(yield* service.getDomain(domainId))
  })), { summary: "Get a custom Domain", tags, scope: "domains:read", params: DomainParams, response: Domain }),

  route("PATCH", "/v1/domains/:domainId", withCaller("domains:write", Effect.gen(function* () {
    const { domainId } = yield* decodeParams(DomainParams)
    const body = yield* decodeJsonBody(UpdateDomainBody)
    let environmentId: string | undefined
    return yield* committedThenForget(Effect.sync(() => environmentId), Effect.map(service.updateDomain(domainId, body), (row) => {
      environmentId = row.environment_id
      return one(row)
    }))
  })), {
    summary: "Turn rp_enabled on or off; an active rp_enabled domain is THE Interaction Domain and active RP ID (If-Match supported)",
    tags, scope: "domains:write", params: DomainParams, body: UpdateDomainBody, response: Domain, idempotent: true,
  }),

  route("DELETE", "/v1/domains/:domainId", withCaller("domains:write", Effect.gen(function* () {
    const { domainId } = yield* decodeParams(DomainParams)
    let environmentId: string | undefined
    return yield* committedThenForget(Effect.sync(() => environmentId), Effect.map(service.deleteDomain(domainId), (deleted) => {
      environmentId = deleted.environmentId
      return json({ id: deleted.id, deleted: true })
    }))
  })), {
    summary: "Delete a custom Domain (If-Match supported); its hostname stops serving", tags, scope: "domains:write",
    params: DomainParams, response: Deleted, idempotent: true,
  }),

  route("POST", "/v1/domains/:domainId/retry-validation", withCaller("domains:write", Effect.gen(function* () {
    const { domainId } = yield* decodeParams(DomainParams)
    let environmentId: string | undefined
    return yield* committedThenForget(Effect.sync(() => environmentId), Effect.map(service.retryValidation(domainId), (row) => {
      environmentId = row.environment_id
      return one(row)
    }))
  })), {
    summary: "Check the domain's DNS TXT record again: moves it to active or failed with validation_errors",
    tags, scope: "domains:write", params: DomainParams, response: Domain, idempotent: true,
  }),
]
