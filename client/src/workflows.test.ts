// Workflow job inputs and results: the inputs decode as the blueprint's job ABI, and a result as
// operators post it (the SDK's tuple encoding) decodes to its JSON document.
import { jsonOutputParams, workflowCreateRequestParams } from '@agent-sandbox/contracts';
import { decodeAbiParameters, encodeAbiParameters } from 'viem';
import { describe, expect, it } from 'vitest';
import { decodeWorkflowResult, encodeWorkflowCreate } from './workflows.ts';

describe('workflow job io', () => {
  it('encodes create with an empty sandbox_config_json and target_service_id 0', () => {
    const input = encodeWorkflowCreate({
      name: 'n',
      workflowJson: '{"command":"ls"}',
      triggerType: 'cron',
      triggerConfig: '0 * * * *',
      targetSandboxId: 'sbx-1',
    });
    expect(decodeAbiParameters(workflowCreateRequestParams, input)).toEqual([
      'n',
      '{"command":"ls"}',
      'cron',
      '0 * * * *',
      '',
      0,
      'sbx-1',
      0n,
    ]);
  });
  it('decodes a posted result', () => {
    const out = encodeAbiParameters(
      [{ type: 'tuple', components: jsonOutputParams }],
      [{ json: '{"runId":"wfr-1"}' }],
    );
    expect(decodeWorkflowResult(out)).toEqual({ runId: 'wfr-1' });
  });
});
