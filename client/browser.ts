// @agent-sandbox/client/browser: the browser-safe part of the client (no node: imports), for the
// web console: job 0/1 inputs encoded exactly as the CLI encodes them.
export {
  buildCreateRequest,
  decodeCreateOutput,
  encodeCreateInput,
  encodeDeleteInput,
  JOB_SANDBOX_CREATE,
  JOB_SANDBOX_DELETE,
  type SandboxCreateRequestInput,
} from './src/job-io.ts';
