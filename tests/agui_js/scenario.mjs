// The official AG-UI JavaScript client (@ag-ui/client's HttpAgent) driving convlab's server.
//
//   node scenario.mjs SERVE_URL SLOW_URL TOKEN
//
// SERVE_URL is a `convlab serve --worker manual` with a summarize strategy at 60 tokens and the bearer
// TOKEN; SLOW_URL a convlab app whose model streams slowly (for the abort). Each step is one run; after
// each, the server's thread (GET /threads/{id}) is read back. The report (JSON on stdout) is asserted by
// tests/test_agui_js.py.

import { HttpAgent } from "@ag-ui/client";

const [url, slowUrl, token] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };
const report = [];

async function thread(base, id) {
  const r = await fetch(`${base}threads/${encodeURIComponent(id)}`, { headers });
  return { status: r.status, body: r.status === 200 ? await r.json() : await r.text() };
}

function compact(event) {
  const out = { type: event.type };
  for (const key of ["messageId", "name", "code", "message", "stepName", "toolCallId"]) {
    if (event[key] !== undefined) out[key] = event[key];
  }
  if (event.outcome !== undefined) out.outcome = event.outcome;
  if (event.type === "MESSAGES_SNAPSHOT") out.ids = event.messages.map((m) => m.id);
  if (event.type === "STATE_SNAPSHOT") out.snapshot = event.snapshot;
  return out;
}

async function step(name, agent, params = {}, { base = url, during } = {}) {
  const events = [];
  let error = null;
  let finished = null;
  const subscriber = {
    onEvent({ event }) {
      events.push(compact(event));
      if (during) during(event, agent);
    },
    onRunFinishedEvent({ outcome, interrupts }) {
      finished = { outcome, interrupts: interrupts ?? null };
    },
  };
  try {
    await agent.runAgent(params, subscriber);
  } catch (err) {
    error = String(err && err.message ? err.message : err);
  }
  report.push({
    name,
    error,
    finished,
    events,
    messages: agent.messages.map((m) => ({ id: m.id, role: m.role, content: m.content ?? null })),
    pendingInterrupts: agent.pendingInterrupts,
    state: agent.state,
    thread: await thread(base, agent.threadId),
  });
}

const agent = new HttpAgent({ url, headers, threadId: "js-1" });

// 1. a run
agent.addMessage({ id: "u1", role: "user", content: "What is the weather in New York today?" });
await step("run", agent);
const firstReply = agent.messages[1];

// 2. the same history again
await step("same", agent);

// 3. an edit: a changed message with a new id, at the root
agent.setMessages([{ id: "u1-edit", role: "user", content: "What is the weather in Los Angeles today?" }]);
await step("edit", agent);

// 4. a regenerate: the history cut before the last reply
agent.setMessages(agent.messages.slice(0, 1));
await step("regenerate", agent);

// 5. a branch switch: the history ends at an older reply
agent.setMessages([{ id: "u1", role: "user", content: "What is the weather in New York today?" }, firstReply]);
await step("switch", agent);

// 6. state: the client state of the run's turn
agent.setState({ units: "celsius", city: "New York" });
agent.addMessage({ id: "u2", role: "user", content: "And tomorrow?" });
await step("state", agent);

// 7. an interrupt (a context.limit for a person) answered by resume
agent.addMessage({
  id: "u3",
  role: "user",
  content: "Plan a weekend in New York for two: a museum on Saturday morning, a long walk in Central Park after lunch, dinner somewhere quiet, and a slow breakfast on Sunday.",
});
await step("interrupt", agent);
const [interrupt] = agent.pendingInterrupts;
if (interrupt === undefined) {
  process.stdout.write(JSON.stringify(report));
  process.exit(3);  // the report says why: the test shows it
}
await step("resume", agent, {
  resume: [{ interruptId: interrupt.id, status: "resolved", payload: { action: "accept_edited", summary: "EDITED: the weather in New York, today and tomorrow." } }],
});

// 8. refused: a history that is not a path of the tree (RUN_ERROR)
agent.setMessages([firstReply, { id: "u1", role: "user", content: "What is the weather in New York today?" }]);
await step("refused", agent);

// 9. an abort: the client stops its run while the reply streams
const slow = new HttpAgent({ url: slowUrl, headers, threadId: "js-abort" });
slow.addMessage({ id: "s1", role: "user", content: "Tell me a long story about the sea, please." });
let aborted = false;
await step("abort", slow, {}, {
  base: slowUrl,
  during(event, who) {
    if (event.type === "TEXT_MESSAGE_CONTENT" && !aborted) {
      aborted = true;
      who.abortRun();
    }
  },
});

process.stdout.write(JSON.stringify(report));
