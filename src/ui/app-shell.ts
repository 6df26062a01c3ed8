import { LitElement, css, html } from 'lit';
import './gpu-capabilities';

export class AgentFlowApp extends LitElement {
  static override styles = css`
    :host { display: block; max-width: 60rem; margin: 0 auto; padding: 1rem; }
    h1 { font-size: 1.4rem; }
    .privacy { font-size: 0.9rem; opacity: 0.8; }
  `;
  override render() {
    return html`
      <header>
        <h1>AgentFlow in the browser</h1>
        <p class="privacy">Everything runs on this device: models on your GPU, memory in this browser's storage. Nothing is sent anywhere unless you turn on a tool that uses the network.</p>
      </header>
      <section aria-labelledby="gpu-h">
        <h2 id="gpu-h">WebGPU</h2>
        <gpu-capabilities></gpu-capabilities>
      </section>
    `;
  }
}
customElements.define('agentflow-app', AgentFlowApp);
