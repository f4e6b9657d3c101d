#!/usr/bin/env python3
"""Writes an `lspci -xxxx` style dump of a compute host whose GPUs sit behind PCIe switches.

No GPU machine was available to record one (see README.md), so this builds the config space the way
the PCI and PCIe base specifications lay it out: type-0 headers for endpoints, type-1 headers with
primary/secondary/subordinate bus numbers for bridges, a PCI Express capability with the port type and
the negotiated link (Link Status), and a Device Serial Number extended capability at 0x100. The vendor
and device ids are those of real parts (NVIDIA H100 SXM 10de:2330, Broadcom PEX89000 switch 1000:c030,
Samsung PM1733 NVMe 144d:a824, an Intel root port 8086:352a). `lspci -F FILE -vv` decodes the result,
and tests/unit/pci_scanner_test.cpp checks that libpci and lspci read the same ids, serials and links.

  make_gpu_host_dump.py --switches 2 --gpus-per-switch 4 --nvme-per-switch 1 > gpu-host-2sw.lspci
  make_gpu_host_dump.py --switches 8 --gpus-per-switch 6 > gpu-host-64fn.lspci   (64 functions)
"""
import argparse
import sys

ROOT_PORT = (0x8086, 0x352A)
SWITCH = (0x1000, 0xC030)
GPU = (0x10DE, 0x2330, 0x10DE, 0x16C1, 0x0302)  # vendor, device, subsystem vendor, subsystem, class
NVME = (0x144D, 0xA824, 0x144D, 0xA801, 0x0108)

PCIE_ROOT_PORT, PCIE_UPSTREAM, PCIE_DOWNSTREAM, PCIE_ENDPOINT = 4, 5, 6, 0


def put16(cfg, off, v):
    cfg[off] = v & 0xFF
    cfg[off + 1] = (v >> 8) & 0xFF


def put32(cfg, off, v):
    for i in range(4):
        cfg[off + i] = (v >> (8 * i)) & 0xFF


def function(vendor, device, cls, port_type, gen, width, serial=None, bridge=None, subsys=(0, 0), rev=0xA1):
    cfg = bytearray(4096)
    put16(cfg, 0x00, vendor)
    put16(cfg, 0x02, device)
    put16(cfg, 0x04, 0x0406 if bridge is None else 0x0407)  # memory space, bus master
    put16(cfg, 0x06, 0x0010)  # capabilities list present
    cfg[0x08] = rev
    cfg[0x09] = 0x02 if cls == 0x0108 else 0x00  # NVMe programming interface
    put16(cfg, 0x0A, cls)
    if bridge is None:
        cfg[0x0E] = 0x00
        put32(cfg, 0x10, 0xE0000004)  # a 64-bit memory BAR
        put16(cfg, 0x2C, subsys[0])
        put16(cfg, 0x2E, subsys[1])
    else:
        cfg[0x0E] = 0x01
        cfg[0x18], cfg[0x19], cfg[0x1A] = bridge
    cfg[0x34] = 0x40
    # PCI Express capability (id 0x10), version 2, the port type in bits 7:4 of its flags.
    cfg[0x40], cfg[0x41] = 0x10, 0x00
    put16(cfg, 0x42, 0x0002 | (port_type << 4) | (0x0100 if port_type in (PCIE_ROOT_PORT, PCIE_DOWNSTREAM) else 0))
    put32(cfg, 0x44, 0x00008FE2 if port_type == PCIE_ENDPOINT else 0x00008022)  # DevCap
    put32(cfg, 0x4C, (width << 4) | gen)  # LnkCap: max width and speed
    put16(cfg, 0x52, 0x1000 | (width << 4) | gen)  # LnkSta: negotiated width and speed
    if serial is not None:
        put32(cfg, 0x100, 0x0003 | (1 << 16))  # Device Serial Number, version 1, last in the list
        put32(cfg, 0x104, serial & 0xFFFFFFFF)
        put32(cfg, 0x108, serial >> 32)
    return cfg


def write(out, bdf, name, cfg):
    out.write(f"{bdf} {name}\n")
    for off in range(0, 4096, 16):
        out.write(f"{off:02x}: " + " ".join(f"{b:02x}" for b in cfg[off:off + 16]) + "\n")
    out.write("\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--switches", type=int, default=2)
    p.add_argument("--gpus-per-switch", type=int, default=4)
    p.add_argument("--nvme-per-switch", type=int, default=0)
    p.add_argument("--domain", type=lambda s: int(s, 16), default=0)
    p.add_argument("--serial-base", type=lambda s: int(s, 16), default=0x48B02DFFFFC12D00)
    args = p.parse_args()

    out = sys.stdout
    d = args.domain
    next_bus = 0x10
    serial = args.serial_base
    for s in range(args.switches):
        endpoints = [GPU] * args.gpus_per_switch + [NVME] * args.nvme_per_switch
        root_bus = 0x00 if s < 8 else 0x80
        rp_dev = 0x01 + s % 8
        usp_bus = next_bus
        dsp_bus = usp_bus + 1
        first_ep_bus = dsp_bus + 1
        last_bus = first_ep_bus + len(endpoints) - 1
        next_bus = (last_bus + 0x10) & ~0x0F
        write(out, f"{d:04x}:{root_bus:02x}:{rp_dev:02x}.0", "PCI bridge: root port",
              function(*ROOT_PORT, 0x0604, PCIE_ROOT_PORT, 5, 16, bridge=(root_bus, usp_bus, last_bus)))
        serial += 1
        write(out, f"{d:04x}:{usp_bus:02x}:00.0", "PCI bridge: switch upstream port",
              function(*SWITCH, 0x0604, PCIE_UPSTREAM, 5, 16, serial=serial, bridge=(usp_bus, dsp_bus, last_bus)))
        for i, ep in enumerate(endpoints):
            bus = first_ep_bus + i
            write(out, f"{d:04x}:{dsp_bus:02x}:{i:02x}.0", "PCI bridge: switch downstream port",
                  function(*SWITCH, 0x0604, PCIE_DOWNSTREAM, 5, 16, bridge=(dsp_bus, bus, bus)))
            serial += 1
            vendor, device, sv, sd, cls = ep
            write(out, f"{d:04x}:{bus:02x}:00.0", "3D controller: GPU" if cls == 0x0302 else "Non-Volatile memory controller: NVMe",
                  function(vendor, device, cls, PCIE_ENDPOINT, 5, 16 if cls == 0x0302 else 4, serial=serial, subsys=(sv, sd)))


if __name__ == "__main__":
    main()
