// The planner engine in a module worker, so prefill and decode never block the page. The worker only hosts
// src/planner/planner-host.ts's PlannerHost (its protocol: src/planner/planner-protocol.ts); the page talks to
// it with comlink through src/planner/planner-client.ts.
import * as Comlink from 'comlink';
import { PlannerHost } from '../src/planner/planner-host';

Comlink.expose(new PlannerHost());
