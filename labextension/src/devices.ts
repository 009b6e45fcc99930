import { IKernelState, IMeterDevice, IMeterReading } from './protocol';

/** A GPU the meter shows, and where its reading comes from. */
export interface IShownDevice extends IMeterDevice {
  /**
   * `null`: the server read it (NVML on its machine, or its simulated devices); else where the
   * kernel that reported it runs (its host's name), for a kernel the server cannot see.
   */
  kernelHost: string | null;
}

/**
 * The GPUs to show: the server's, and those of the current kernel's last report when the server
 * cannot see that kernel (it runs behind a gateway, maybe on another machine). A kernel the
 * server sees is on the server's machine, whose GPUs the server reads: its report adds nothing.
 * A GPU the server reads and a remote kernel reports too (the same NVML UUID: a gateway on the
 * server's machine) is counted once, as the server's.
 */
export function shownDevices(
  reading: IMeterReading | null,
  kernelId: string | null,
  report: IKernelState | null
): IShownDevice[] {
  const server: IShownDevice[] =
    reading && reading.source !== 'none'
      ? reading.devices.map(device => ({ ...device, kernelHost: null }))
      : [];
  const local = reading?.local_kernels ?? [];
  if (!reading || !report || !kernelId || local.includes(kernelId)) {
    return server;
  }
  const seen = new Set(server.map(device => device.uuid).filter(Boolean));
  const host = report.host || "the kernel's host";
  const kernel = report.devices
    .filter(device => !device.uuid || !seen.has(device.uuid))
    .map(device => ({
      index: device.index,
      name: device.name,
      simulated: device.simulated,
      used_bytes: device.used_bytes,
      total_bytes: device.total_bytes,
      utilization_percent: device.utilization_percent,
      temperature_c: device.temperature_c,
      problem: null,
      uuid: device.uuid ?? null,
      kernelHost: host
    }));
  return [...server, ...kernel];
}
