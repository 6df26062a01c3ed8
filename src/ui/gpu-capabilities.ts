import { LitElement, css, html } from 'lit';
import type { GpuCapabilities } from '../gpu/device';
import { startGpuProbe } from '../gpu/probe-client';

/**
 * The WebGPU capability report: asks a module worker (where the planner engine runs) for its adapter,
 * features and limits, or says what is wrong and what to do.
 */
export class GpuCapabilitiesPanel extends LitElement {
  static override properties = { caps: { state: true }, error: { state: true } };
  declare caps: GpuCapabilities | undefined;
  declare error: string | undefined;

  static override styles = css`
    :host { display: block; font: 14px/1.4 system-ui, sans-serif; }
    dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0; }
    dt { font-weight: 600; }
    .error { color: var(--agentflow-error-color, #b00020); white-space: pre-wrap; }
  `;

  override connectedCallback(): void {
    super.connectedCallback();
    void this.probe();
  }

  private async probe(): Promise<void> {
    const probe = startGpuProbe();
    try {
      this.caps = await probe.api.capabilities();
      this.error = undefined;
    } catch (e) {
      this.error = (e as Error).message ?? String(e);
    } finally {
      // The Models panel reads the result to warn about missing WebGPU or too little GPU memory.
      this.dispatchEvent(new CustomEvent('gpu-capabilities', { detail: { caps: this.caps, error: this.error }, bubbles: true, composed: true }));
      probe.terminate();
    }
  }

  override render() {
    if (this.error) return html`<p class="error" role="alert" part="error">${this.error}</p>`;
    const c = this.caps;
    if (!c) return html`<p aria-busy="true">Checking WebGPU…</p>`;
    const mib = (n: number) => `${Math.round(n / 2 ** 20)} MiB`;
    return html`<dl part="report" data-testid="gpu-report">
      <dt>Adapter</dt><dd>${[c.vendor, c.architecture, c.description].filter(Boolean).join(' / ') || 'unknown'}</dd>
      <dt>shader-f16</dt><dd data-testid="f16">${c.f16 ? 'yes' : 'no (packed-f16 fallback)'}</dd>
      <dt>subgroups</dt><dd>${c.subgroups ? 'yes' : 'no'}</dd>
      <dt>Max buffer</dt><dd>${mib(c.limits.maxBufferSize)}</dd>
      <dt>Max storage binding</dt><dd>${mib(c.limits.maxStorageBufferBindingSize)}</dd>
      <dt>Workgroup memory</dt><dd>${c.limits.maxComputeWorkgroupStorageSize} bytes</dd>
      <dt>Software adapter</dt><dd>${c.isSoftware ? 'yes (slow; fine for tiny models)' : 'no'}</dd>
    </dl>`;
  }
}
customElements.define('gpu-capabilities', GpuCapabilitiesPanel);
