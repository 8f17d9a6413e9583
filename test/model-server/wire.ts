// Test-only: the wire formats of the scripted model server — OpenAI Responses and Chat Completions,
// Anthropic Messages and Gemini generateContent — each as "what a request asks" and "the streamed answer".

/** What the scripted server answers one request with. */
export type Reply =
  | { kind: 'tool'; command: string; callId: string }
  | { kind: 'text'; text: string }
  | { kind: 'json'; text: string };

/** Tokens the server charges for one answer (input includes the cached part). */
export interface Charge {
  input: number;
  output: number;
  cached: number;
}

// biome-ignore lint/suspicious/noExplicitAny: request bodies are whatever each harness sends
type Body = any;

export interface Asked {
  /** The request declares tools (a harness turn, not a title or classifier call). */
  hasTools: boolean;
  /** The request carries the output of a tool call. */
  hasToolResult: boolean;
  /** The request wants a JSON answer (gemini's classifiers). */
  wantsJson: boolean;
}

const sse = (event: string | undefined, data: unknown) =>
  `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

// ---- OpenAI Responses (codex) ----

export function responsesAsked(b: Body): Asked {
  const input = Array.isArray(b.input) ? b.input : [];
  return {
    hasTools: Array.isArray(b.tools) && b.tools.length > 0,
    hasToolResult: input.some((i: Body) => typeof i?.type === 'string' && i.type.endsWith('_output')),
    wantsJson: false,
  };
}

/** The shell tool codex declared and the arguments that make it run `command`. */
function codexShellCall(tools: Body[], command: string): { name: string; args: unknown } {
  const byName = (n: string) => tools.find((t) => t?.name === n);
  const exec = byName('exec_command');
  if (exec) return { name: 'exec_command', args: { cmd: command } };
  const sc = byName('shell_command');
  if (sc) return { name: 'shell_command', args: { command } };
  const sh = byName('shell');
  if (sh) return { name: 'shell', args: { command: ['bash', '-lc', command] } };
  const any = tools.find((t) => t?.type === 'function');
  return { name: any?.name ?? 'shell', args: { command: ['bash', '-lc', command] } };
}

export function responsesStream(b: Body, reply: Reply, charge: Charge, model: string): string {
  const id = `resp_${Math.random().toString(36).slice(2)}`;
  const usage = {
    input_tokens: charge.input,
    input_tokens_details: { cached_tokens: charge.cached },
    output_tokens: charge.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: charge.input + charge.output,
  };
  let out = sse('response.created', {
    type: 'response.created',
    response: { id, object: 'response', model, status: 'in_progress', output: [] },
  });
  let item: Body;
  if (reply.kind === 'tool') {
    const call = codexShellCall(Array.isArray(b.tools) ? b.tools : [], reply.command);
    item = {
      type: 'function_call',
      id: `fc_${reply.callId}`,
      call_id: reply.callId,
      name: call.name,
      arguments: JSON.stringify(call.args),
      status: 'completed',
    };
    out += sse('response.output_item.added', { type: 'response.output_item.added', output_index: 0, item });
  } else {
    const msgId = `msg_${id}`;
    item = {
      type: 'message',
      id: msgId,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: reply.text, annotations: [] }],
    };
    out += sse('response.output_item.added', {
      type: 'response.output_item.added',
      output_index: 0,
      item: { ...item, content: [], status: 'in_progress' },
    });
    out += sse('response.output_text.delta', {
      type: 'response.output_text.delta',
      item_id: msgId,
      output_index: 0,
      content_index: 0,
      delta: reply.text,
    });
  }
  out += sse('response.output_item.done', { type: 'response.output_item.done', output_index: 0, item });
  out += sse('response.completed', {
    type: 'response.completed',
    response: { id, object: 'response', model, status: 'completed', output: [item], usage },
  });
  return out;
}

// ---- OpenAI Chat Completions (opencode through an OpenAI-compatible provider) ----

export function chatAsked(b: Body): Asked {
  const msgs = Array.isArray(b.messages) ? b.messages : [];
  return {
    hasTools: Array.isArray(b.tools) && b.tools.length > 0,
    hasToolResult: msgs.some((m: Body) => m?.role === 'tool'),
    wantsJson: false,
  };
}

export function chatStream(b: Body, reply: Reply, charge: Charge, model: string): string {
  const id = `chatcmpl_${Math.random().toString(36).slice(2)}`;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    sse(undefined, { id, object: 'chat.completion.chunk', created: 0, model, choices, ...extra });
  let out = chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  if (reply.kind === 'tool') {
    const tools: Body[] = Array.isArray(b.tools) ? b.tools : [];
    const bash = tools.find((t) => t?.function?.name === 'bash') ?? tools[0];
    const name = bash?.function?.name ?? 'bash';
    const args = JSON.stringify({ command: reply.command, description: 'Runs the requested command' });
    out += chunk([
      {
        index: 0,
        delta: {
          tool_calls: [{ index: 0, id: reply.callId, type: 'function', function: { name, arguments: args } }],
        },
        finish_reason: null,
      },
    ]);
    out += chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]);
  } else {
    out += chunk([{ index: 0, delta: { content: reply.text }, finish_reason: null }]);
    out += chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]);
  }
  out += chunk([], {
    usage: {
      prompt_tokens: charge.input,
      completion_tokens: charge.output,
      total_tokens: charge.input + charge.output,
      prompt_tokens_details: { cached_tokens: charge.cached },
    },
  });
  return out + sse(undefined, '[DONE]');
}

// ---- Anthropic Messages (claude) ----

export function messagesAsked(b: Body): Asked {
  const msgs = Array.isArray(b.messages) ? b.messages : [];
  const last = msgs[msgs.length - 1];
  const content = Array.isArray(last?.content) ? last.content : [];
  return {
    hasTools: Array.isArray(b.tools) && b.tools.length > 0,
    hasToolResult: content.some((c: Body) => c?.type === 'tool_result'),
    wantsJson: false,
  };
}

function messagesUsage(charge: Charge) {
  return {
    input_tokens: charge.input - charge.cached,
    cache_read_input_tokens: charge.cached,
    cache_creation_input_tokens: 0,
    output_tokens: charge.output,
  };
}

function messagesBlock(b: Body, reply: Reply): Body {
  if (reply.kind !== 'tool') return { type: 'text', text: reply.text };
  const tools: Body[] = Array.isArray(b.tools) ? b.tools : [];
  const name = tools.find((t) => t?.name === 'Bash')?.name ?? 'Bash';
  return {
    type: 'tool_use',
    id: `toolu_${reply.callId}`,
    name,
    input: { command: reply.command, description: 'Runs the requested command' },
  };
}

export function messagesJson(b: Body, reply: Reply, charge: Charge, model: string): unknown {
  const block = messagesBlock(b, reply);
  return {
    id: `msg_${Math.random().toString(36).slice(2)}`,
    type: 'message',
    role: 'assistant',
    model,
    content: [block],
    stop_reason: block.type === 'tool_use' ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: messagesUsage(charge),
  };
}

export function messagesStream(b: Body, reply: Reply, charge: Charge, model: string): string {
  const block = messagesBlock(b, reply);
  const u = messagesUsage(charge);
  let out = sse('message_start', {
    type: 'message_start',
    message: {
      id: `msg_${Math.random().toString(36).slice(2)}`,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...u, output_tokens: 1 },
    },
  });
  if (block.type === 'tool_use') {
    out += sse('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { ...block, input: {} },
    });
    out += sse('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
    });
  } else {
    out += sse('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    });
    out += sse('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: block.text },
    });
  }
  out += sse('content_block_stop', { type: 'content_block_stop', index: 0 });
  out += sse('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: block.type === 'tool_use' ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: u,
  });
  return out + sse('message_stop', { type: 'message_stop' });
}

// ---- Gemini generateContent (gemini-cli) ----

export function geminiAsked(b: Body): Asked {
  const contents = Array.isArray(b.contents) ? b.contents : [];
  const last = contents[contents.length - 1];
  const parts = Array.isArray(last?.parts) ? last.parts : [];
  const tools = Array.isArray(b.tools) ? b.tools : [];
  return {
    hasTools: tools.some(
      (t: Body) => Array.isArray(t?.functionDeclarations) && t.functionDeclarations.length,
    ),
    hasToolResult: parts.some((p: Body) => p?.functionResponse),
    wantsJson: b.generationConfig?.responseMimeType === 'application/json',
  };
}

export function geminiResponse(b: Body, reply: Reply, charge: Charge, model: string): unknown {
  let part: Body;
  if (reply.kind === 'tool') {
    const decls: Body[] = (b.tools ?? []).flatMap((t: Body) => t?.functionDeclarations ?? []);
    const name = decls.find((d) => d?.name === 'run_shell_command')?.name ?? 'run_shell_command';
    part = { functionCall: { id: reply.callId, name, args: { command: reply.command } } };
  } else {
    part = { text: reply.text };
  }
  return {
    candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: {
      promptTokenCount: charge.input,
      candidatesTokenCount: charge.output,
      cachedContentTokenCount: charge.cached,
      totalTokenCount: charge.input + charge.output,
    },
    modelVersion: model,
  };
}

export const geminiStream = (b: Body, reply: Reply, charge: Charge, model: string): string =>
  sse(undefined, geminiResponse(b, reply, charge, model));
