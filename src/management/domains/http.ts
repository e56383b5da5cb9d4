import { Effect } from "effect"
import { json } from "../../http/route.js"
import { Tenancy } from "../../tenancy/service.js"
import { endpoint } from "../conventions/endpoint.js"
import { withEtag } from "../conventions/etag.js"
import { pageOf, parsePage } from "../conventions/pagination.js"
import type { DomainRow } from "./repo.js"
import {
  CreateDomainBody,
  Deleted,
  Domain,
  DomainList,
  DomainParams,
  ListDomainsQuery,
  UpdateDomainBody,
} from "./schema.js"
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
  withEtag(
    json(presentDomain(row), status, status === 201 ? { location: `/v1/domains/${row.id}` } : undefined),
    row.id,
    row.version,
  )

const ifMatch = { resource: (p: typeof DomainParams.Type) => p.domainId }

/** After the commit, this replica drops its cached Environment (other replicas follow within 5 s). */
const forgetAfterCommit = (afterCommit: (f: () => void) => void, environmentId: string) =>
  Effect.map(Tenancy, (tenancy) => afterCommit(() => tenancy.forgetEnvironment(environmentId)))

// Writes that may move the Interaction Domain (rp_enabled, deletion, activation) forget the
// Environment's cached copy once committed.
export const domainRoutes = [
  endpoint(
    {
      method: "GET",
      path: "/v1/domains",
      summary: "List the custom Domains of an Environment",
      tags,
      scope: "domains:read",
      query: ListDomainsQuery,
      response: DomainList,
    },
    ({ query }) =>
      Effect.gen(function* () {
        const page = yield* parsePage(query)
        const rows = yield* service.listDomains(query, page)
        return json(pageOf(rows, page, (r) => r.id, presentDomain))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/domains",
      summary: "Register a custom Domain (status pending; publish the verification TXT record, then retry-validation)",
      tags,
      scope: "domains:write",
      body: CreateDomainBody,
      response: Domain,
      status: 201,
      idempotent: true,
    },
    ({ body }) => Effect.map(service.createDomain(body), (row) => one(row, 201)),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/domains/:domainId",
      summary: "Get a custom Domain",
      tags,
      scope: "domains:read",
      params: DomainParams,
      response: Domain,
    },
    ({ params }) => Effect.map(service.getDomain(params.domainId), (row) => one(row)),
  ),

  endpoint(
    {
      method: "PATCH",
      path: "/v1/domains/:domainId",
      summary:
        "Turn rp_enabled on or off; an active rp_enabled domain is THE Interaction Domain and active RP ID (If-Match supported)",
      tags,
      scope: "domains:write",
      params: DomainParams,
      body: UpdateDomainBody,
      response: Domain,
      idempotent: true,
      ifMatch,
    },
    ({ params, body, expectedVersion, afterCommit }) =>
      Effect.gen(function* () {
        const row = yield* service.updateDomain(params.domainId, body, expectedVersion)
        yield* forgetAfterCommit(afterCommit, row.environment_id)
        return one(row)
      }),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/domains/:domainId",
      summary: "Delete a custom Domain (If-Match supported); its hostname stops serving",
      tags,
      scope: "domains:write",
      params: DomainParams,
      response: Deleted,
      idempotent: true,
      ifMatch,
    },
    ({ params, expectedVersion, afterCommit }) =>
      Effect.gen(function* () {
        const deleted = yield* service.deleteDomain(params.domainId, expectedVersion)
        yield* forgetAfterCommit(afterCommit, deleted.environmentId)
        return json({ id: deleted.id, deleted: true })
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/domains/:domainId/retry-validation",
      summary: "Check the domain's DNS TXT record again: moves it to active or failed with validation_errors",
      tags,
      scope: "domains:write",
      params: DomainParams,
      response: Domain,
      idempotent: true,
      ifMatch,
    },
    ({ params, expectedVersion, afterCommit }) =>
      Effect.gen(function* () {
        const row = yield* service.retryValidation(params.domainId, expectedVersion)
        yield* forgetAfterCommit(afterCommit, row.environment_id)
        return one(row)
      }),
  ),
]
