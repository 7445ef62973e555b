// A minimal CopilotKit 1.74 chat over `convlab serve`: CopilotKit's own CopilotChat (regenerate, stop), an
// @ag-ui/client HttpAgent and nothing of convlab's. ?server=<convlab serve url>&thread=<id>; &interrupts=1
// answers interrupts with CopilotKit's useInterrupt.
import { StrictMode, useEffect } from "react";
import { createRoot } from "react-dom/client";
import { HttpAgent } from "@ag-ui/client";
import { CopilotKit } from "@copilotkit/react-core";
import { useCopilotKit, useInterrupt } from "@copilotkit/react-core/v2";
import { CopilotChat } from "@copilotkit/react-ui";
import "@copilotkit/react-ui/styles.css";

const params = new URLSearchParams(location.search);
const threadId = params.get("thread");

// What a reload needs: HttpAgent has no connect(); a run with no messages loads the thread from convlab.
class ConvlabAgent extends HttpAgent {
  connect(input) {
    return this.run({ ...input, messages: [] });
  }
}

// CopilotChat (react-ui) does not connect its agent when it mounts: ask CopilotKit to, once.
function Restore() {
  const { copilotkit } = useCopilotKit();
  useEffect(() => {
    copilotkit.connectAgent({ agent }).catch((e) => console.warn("connect failed:", e.message));
  }, [copilotkit]);
  return null;
}

const agent = new ConvlabAgent({ url: params.get("server"), threadId });
window.convlabAgent = agent;

function Decision() {
  const element = useInterrupt({
    renderInChat: false,
    render: ({ interrupt, resolve, cancel }) => (
      <div className="decision" data-testid="decision">
        <p>{interrupt?.message}</p>
        <button onClick={() => resolve({ action: "accept" })}>Accept</button>
        <button onClick={() => cancel()}>Cancel</button>
      </div>
    ),
  });
  return element ?? null;
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <CopilotKit agents__unsafe_dev_only={{ default: agent }} threadId={threadId}>
      <Restore />
      {params.get("interrupts") === "1" && <Decision />}
      <CopilotChat />
    </CopilotKit>
  </StrictMode>,
);
