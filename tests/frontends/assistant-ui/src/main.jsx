// A minimal assistant-ui 0.15 chat over `convlab serve`: its own primitives (Edit, Reload, BranchPicker,
// Cancel), @assistant-ui/react-ag-ui's useAgUiRuntime over an @ag-ui/client HttpAgent, nothing of convlab's.
// ?server=<convlab serve url>&thread=<id>; &interrupts=1 answers interrupts with useAgUiInterrupts.
import { StrictMode, useMemo } from "react";
import { createRoot } from "react-dom/client";
import { HttpAgent } from "@ag-ui/client";
import {
  ActionBarPrimitive, AssistantRuntimeProvider, BranchPickerPrimitive, ComposerPrimitive, ExportedMessageRepository,
  MessagePrimitive, ThreadPrimitive,
} from "@assistant-ui/react";
import {
  fromAgUiMessages, useAgUiInterrupts, useAgUiRuntime, useAgUiSubmitInterruptResponses,
} from "@assistant-ui/react-ag-ui";
import "./page.css";

const params = new URLSearchParams(location.search);
const threadId = params.get("thread");
const agent = new HttpAgent({ url: params.get("server"), threadId });
window.convlabAgent = agent;

// What a reload needs: the thread's active path, from a run with no messages (its MESSAGES_SNAPSHOT).
const history = {
  async load() {
    const input = { threadId, runId: crypto.randomUUID(), messages: [], tools: [], context: [], state: {}, forwardedProps: {} };
    const snapshot = await new Promise((resolve, reject) => {
      let messages = [];
      agent.run(input).subscribe({
        next: (event) => { if (event.type === "MESSAGES_SNAPSHOT") messages = event.messages; },
        error: reject,
        complete: () => resolve(messages),
      });
    });
    return ExportedMessageRepository.fromArray(fromAgUiMessages(snapshot));
  },
  async append() {}, // convlab records every message itself
};

function Branches() {
  return (
    <BranchPickerPrimitive.Root hideWhenSingleBranch className="branches">
      <BranchPickerPrimitive.Previous>‹</BranchPickerPrimitive.Previous>
      <span><BranchPickerPrimitive.Number />/<BranchPickerPrimitive.Count /></span>
      <BranchPickerPrimitive.Next>›</BranchPickerPrimitive.Next>
    </BranchPickerPrimitive.Root>
  );
}

function UserMessage() {
  return (
    <MessagePrimitive.Root className="msg user">
      <div className="text"><MessagePrimitive.Parts /></div>
      <ActionBarPrimitive.Root className="actions"><ActionBarPrimitive.Edit>Edit</ActionBarPrimitive.Edit></ActionBarPrimitive.Root>
      <Branches />
    </MessagePrimitive.Root>
  );
}

function AssistantMessage() {
  return (
    <MessagePrimitive.Root className="msg assistant">
      <div className="text"><MessagePrimitive.Parts /></div>
      <ActionBarPrimitive.Root className="actions"><ActionBarPrimitive.Reload>Regenerate</ActionBarPrimitive.Reload></ActionBarPrimitive.Root>
      <Branches />
    </MessagePrimitive.Root>
  );
}

function EditComposer() {
  return (
    <ComposerPrimitive.Root className="msg user editing">
      <ComposerPrimitive.Input className="edit" />
      <ComposerPrimitive.Cancel>Cancel</ComposerPrimitive.Cancel>
      <ComposerPrimitive.Send>Save</ComposerPrimitive.Send>
    </ComposerPrimitive.Root>
  );
}

function Decision() {
  const interrupts = useAgUiInterrupts();
  const submit = useAgUiSubmitInterruptResponses();
  if (interrupts.length === 0) return null;
  const answer = (status, payload) => submit(interrupts.map((i) => ({ interruptId: i.id, status, payload })));
  return (
    <div className="decision" data-testid="decision">
      <p>{interrupts[0].message}</p>
      <button onClick={() => answer("resolved", { action: "accept" })}>Accept</button>
      <button onClick={() => answer("cancelled")}>Cancel</button>
    </div>
  );
}

function Chat() {
  const adapters = useMemo(() => ({ history }), []);
  const runtime = useAgUiRuntime({ agent, adapters, onError: (e) => console.warn("assistant-ui run error:", e.message) });
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <ThreadPrimitive.Root className="thread">
        <ThreadPrimitive.Viewport className="viewport">
          <ThreadPrimitive.Messages components={{ UserMessage, AssistantMessage, EditComposer }} />
          {params.get("interrupts") === "1" && <Decision />}
        </ThreadPrimitive.Viewport>
        <ComposerPrimitive.Root className="composer">
          <ComposerPrimitive.Input className="input" placeholder="Write a message" />
          <ThreadPrimitive.If running={false}><ComposerPrimitive.Send className="send">Send</ComposerPrimitive.Send></ThreadPrimitive.If>
          <ThreadPrimitive.If running><ComposerPrimitive.Cancel className="stop">Stop</ComposerPrimitive.Cancel></ThreadPrimitive.If>
        </ComposerPrimitive.Root>
      </ThreadPrimitive.Root>
    </AssistantRuntimeProvider>
  );
}

createRoot(document.getElementById("root")).render(<StrictMode><Chat /></StrictMode>);
