// The blueprint's job router: the five jobs wired to their handlers with the ABI lists from jobs.ts.
import { type JobRouter, router } from '@agent-sandbox/sdk';
import type { BlueprintDeps } from './deps.ts';
import { sandboxHandlers } from './handlers/sandbox.ts';
import { workflowHandlers } from './handlers/workflow.ts';
import {
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
  JOB_WORKFLOW_CANCEL,
  JOB_WORKFLOW_CREATE,
  JOB_WORKFLOW_TRIGGER,
  JSON_OUTPUT,
  SANDBOX_CREATE_INPUT,
  SANDBOX_CREATE_OUTPUT,
  SANDBOX_DELETE_INPUT,
  WORKFLOW_CREATE_INPUT,
  WORKFLOW_ID_INPUT,
} from './jobs.ts';

export interface BlueprintRouter {
  router: JobRouter;
  sandbox: ReturnType<typeof sandboxHandlers>;
  workflow: ReturnType<typeof workflowHandlers>;
}

/**
 * The router for this blueprint. In instance modes jobs 0/1 are not routed: the contract refuses
 * them in onJobCall, so they never reach an operator.
 */
export function blueprintRouter(deps: BlueprintDeps): BlueprintRouter {
  const sandbox = sandboxHandlers(deps);
  const workflow = workflowHandlers(deps);
  const r = router();
  if (deps.mode === 'cloud') {
    r.route(
      JOB_SANDBOX_CREATE,
      { name: 'SANDBOX_CREATE', input: SANDBOX_CREATE_INPUT, output: SANDBOX_CREATE_OUTPUT },
      sandbox.create,
    );
    r.route(
      JOB_SANDBOX_DELETE,
      { name: 'SANDBOX_DELETE', input: SANDBOX_DELETE_INPUT, output: JSON_OUTPUT },
      sandbox.remove,
    );
  }
  r.route(
    JOB_WORKFLOW_CREATE,
    { name: 'WORKFLOW_CREATE', input: WORKFLOW_CREATE_INPUT, output: JSON_OUTPUT },
    workflow.create,
  );
  r.route(
    JOB_WORKFLOW_TRIGGER,
    { name: 'WORKFLOW_TRIGGER', input: WORKFLOW_ID_INPUT, output: JSON_OUTPUT },
    workflow.trigger,
  );
  r.route(
    JOB_WORKFLOW_CANCEL,
    { name: 'WORKFLOW_CANCEL', input: WORKFLOW_ID_INPUT, output: JSON_OUTPUT },
    workflow.cancel,
  );
  return { router: r, sandbox, workflow };
}
