// The grammar of `agent-sandbox service` (kept apart from args.ts, which spreads it in).
import type { CommandSpec, OptSpec } from './args.ts';

export function serviceCommand(createOptions: Record<string, OptSpec>): CommandSpec {
  return {
    summary: 'services: request (and wait for activation) | wait | terminate',
    usage:
      'service request --mode instance|tee-instance|cloud [--blueprint-id N] [--operators 0x…,…] [--ttl S] [--payment ETHER] [sandbox flags of create] | service wait <request-id> | service terminate <service-id>',
    positionals: [
      { name: 'action', required: true },
      { name: 'target', required: false },
    ],
    options: {
      ...createOptions,
      mode: {
        type: 'string',
        arg: 'MODE',
        help: 'request: instance (default), tee-instance or cloud (picks the devnet blueprint; tee-instance asks Tangle for TEE confidentiality; cloud: a service many operators serve, no sandbox request, sandboxes are created in it later with create)',
      },
      'blueprint-id': {
        type: 'string',
        arg: 'N',
        help: 'request: the blueprint id on Tangle (devnet: from --mode)',
      },
      operators: {
        type: 'string',
        arg: 'ADDRS',
        help: 'request: operator addresses, comma-separated (devnet: operator1)',
      },
      ttl: {
        type: 'string',
        arg: 'SECONDS',
        help: 'request: service lifetime (0 = none; the real protocol wants >= 3600)',
      },
      payment: {
        type: 'string',
        arg: 'ETHER',
        help: 'request: native payment sent with the request (default 0)',
      },
      permit: {
        type: 'string',
        arg: 'ADDRS',
        help: 'request: extra permitted callers, comma-separated (the requester always is one)',
      },
      'no-wait': { type: 'boolean', help: 'request: return once the request is on chain' },
      'from-block': { type: 'string', arg: 'N', help: 'wait: read events from this block (default 0)' },
    },
    details:
      "request sends Tangle's requestService with the sandbox request (the create flags) as the service config (a cloud service has none: its operators, named with --operators, then take creates assigned by their free capacity), then waits until every named operator approved it and prints the service id (exit 6 when an operator rejects it or it expires; exit 5 on --timeout, the request stays pending: `service wait` resumes). terminate ends a service you own (terminateService); its operators delete the instance sandbox. Then use the sandbox with --instance <service-id>.",
    examples: [
      'agent-sandbox service request --devnet .devnet/devnet.json --mode instance --name mine --cpu 1 --memory 1024',
      'agent-sandbox service request --rpc URL --tangle 0x… --blueprint-id 4 --operators 0xOp… --ttl 86400 --payment 0.01',
      'agent-sandbox service request --mode cloud --rpc URL --tangle 0x… --blueprint-id 0 --operators 0xOpA…,0xOpB…,0xOpC…',
      'agent-sandbox service terminate 7 --rpc URL --tangle 0x…',
    ],
  };
}
