// The planner engine in a module worker, so prefill and decode never block the page. The worker only hosts
// src/engine/planner-host.ts's PlannerHost (its protocol: src/engine/planner-protocol.ts); the page talks to
// it with comlink through src/engine/planner-client.ts.
import * as Comlink from 'comlink';
import { PlannerHost } from '../src/planner/planner-host';

Comlink.expose(new PlannerHost());
