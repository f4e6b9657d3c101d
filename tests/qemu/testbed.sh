#!/usr/bin/env bash
# A lab of real kernels by hand (docs/qemu.md): boots N QEMU VMs with Debian's kernel and the test bed's
# initramfs, each with hot-plug slots, and writes a pool file for `yardd --driver qemu`.
#   tests/qemu/testbed.sh up [N] [DIR]   boot N VMs (default 2) in DIR (default /tmp/switchyard-lab)
#   tests/qemu/testbed.sh down [DIR]     stop them
#   tests/qemu/testbed.sh shell VM [DIR] a shell in a VM's console (socat; Ctrl-C leaves)
# Needs ./setup.sh (QEMU, busybox, the kernel in .deps/linux) and a build (build/qemu-guest/initrd.gz).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
command=${1:-}; shift || true
case "$command" in
  up)
    n=${1:-2} dir=${2:-/tmp/switchyard-lab}
    kernel=$(ls "$root"/.deps/linux/boot/vmlinuz-* 2>/dev/null | head -n1)
    initrd=${SWITCHYARD_GUEST_INITRD:-$root/build/qemu-guest/initrd.gz}
    [ -n "$kernel" ] || { echo "testbed: no kernel in .deps/linux (run ./setup.sh)" >&2; exit 1; }
    [ -s "$initrd" ] || { echo "testbed: no $initrd (build first: cmake --build build --target qemu_guest)" >&2; exit 1; }
    mkdir -p "$dir"
    hosts=""
    for i in $(seq 1 "$n"); do
      vm="vm$i"
      slots=""
      args=()
      for s in 1 2 3 4; do
        args+=(-device "pcie-root-port,id=rp$s,slot=$s,chassis=$s")
        slots+="${slots:+, }\"rp$s\""
      done
      qemu-system-x86_64 -machine q35 -accel tcg -m 512 -smp 1 -nodefaults -display none -no-reboot \
        -kernel "$kernel" -initrd "$initrd" -append "console=ttyS0 quiet loglevel=3 panic=-1" "${args[@]}" \
        -netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0 \
        -qmp "unix:$dir/$vm.qmp,server=on,wait=off" -serial "file:$dir/$vm.kernel.log" \
        -device virtio-serial-pci -chardev "socket,id=con,path=$dir/$vm.console,server=on,wait=off" -device virtconsole,chardev=con \
        -pidfile "$dir/$vm.pid" -daemonize
      hosts+="${hosts:+,
    }{\"name\": \"$vm\", \"qmp\": \"$dir/$vm.qmp\", \"slots\": [$slots], \"cpu_cores\": 1, \"memory_gib\": 1}"
    done
    devices=""
    for g in $(seq 0 $((2 * n - 1))); do
      devices+="${devices:+,
    }{\"id\": \"gpu$g\", \"kind\": \"gpu\", \"model\": \"stand-in GPU (QEMU NVMe)\", \"qemu\": {\"driver\": \"nvme\", \"serial\": \"LAB-GPU-$g\"}, \"backing_mib\": 64}"
    done
    devices+=",
    {\"id\": \"nic0\", \"kind\": \"nic\", \"qemu\": {\"driver\": \"e1000e\", \"mac\": \"52:54:00:5e:00:01\"}}"
    printf '{"hosts": [\n    %s],\n  "devices": [\n    %s]}\n' "$hosts" "$devices" > "$dir/pool.json"
    echo "testbed: $n VM(s) booting in $dir (about 10 s each without KVM); pool file $dir/pool.json"
    echo "  build/bin/yardd --driver qemu --qemu-pool $dir/pool.json --state-dir $dir/state --host-policy-default trust-fabric"
    ;;
  down)
    dir=${1:-/tmp/switchyard-lab}
    for p in "$dir"/*.pid; do [ -e "$p" ] && kill "$(cat "$p")" 2>/dev/null || true; rm -f "$p"; done
    echo "testbed: stopped the VMs in $dir"
    ;;
  shell)
    vm=${1:?VM name} dir=${2:-/tmp/switchyard-lab}
    exec socat -,raw,echo=0 "UNIX-CONNECT:$dir/$vm.console"
    ;;
  *) sed -n '2,8p' "$0"; exit 2 ;;
esac
