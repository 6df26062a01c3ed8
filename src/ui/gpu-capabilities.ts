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
    dt code { font-weight: normal; font-size: 0.85em; opacity: 0.75; margin-left: 0.3em; overflow-wrap: anywhere; }
    dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
    /* A phone: one column, each value under its label, rather than labels squeezed a word per line. */
    @media (max-width: 480px) { dl { grid-template-columns: 1fr; gap: 0 0; } dd { margin-bottom: 0.35rem; } }
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
    // Plain words first, the WebGPU term (what error messages and bug reports name) second, in a <code>.
    return html`<dl part="report" data-testid="gpu-report">
      <dt>Graphics adapter</dt><dd>${[c.vendor, c.architecture, c.description].filter(Boolean).join(' / ') || 'unknown'}</dd>
      <dt>Half-precision maths <code>shader-f16</code></dt><dd data-testid="f16">${c.f16 ? 'yes' : 'no: the planner packs half-precision numbers itself, a little slower (packed-f16 fallback)'}</dd>
      <dt>Fast group operations <code>subgroups</code></dt><dd>${c.subgroups ? 'yes' : 'no (not needed)'}</dd>
      <dt>Largest GPU buffer <code>maxBufferSize</code></dt><dd>${mib(c.limits.maxBufferSize)}</dd>
      <dt>Largest buffer one shader reads <code>maxStorageBufferBindingSize</code></dt><dd>${mib(c.limits.maxStorageBufferBindingSize)}</dd>
      <dt>Shared memory per workgroup <code>maxComputeWorkgroupStorageSize</code></dt><dd>${c.limits.maxComputeWorkgroupStorageSize} bytes</dd>
      <dt>Runs on the CPU (software adapter)</dt><dd>${c.isSoftware ? 'yes: slow, fine for tiny models' : 'no'}</dd>
    </dl>`;
  }
}
customElements.define('gpu-capabilities', GpuCapabilitiesPanel);
