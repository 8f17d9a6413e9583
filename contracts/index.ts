// The contracts package's public door: ABIs and bytecode generated from forge's output.
export * from './abi/index.ts';
export * from './jobs.ts';
export * from './revert.ts';
