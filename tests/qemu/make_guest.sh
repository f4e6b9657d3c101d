#!/usr/bin/env bash
# Builds the guest image of the QEMU test bed (docs/qemu.md): a gzip'd initramfs for Debian's kernel with
# busybox, the kernel modules the pool's devices need (NVMe, e1000e, virtio-net, resolved with depmod), an
# /init that brings up the console and the network, and optionally yard-agent with every library ldd lists.
#   tests/qemu/make_guest.sh KERNEL_DIR OUT.cpio.gz [YARD_AGENT]
# KERNEL_DIR is an extracted linux-image package (./setup.sh puts one in .deps/linux).
set -euo pipefail
kernel_dir=$1 out=$2 agent=${3:-}
busybox=$(command -v busybox) || { echo "make_guest: busybox is missing (./setup.sh installs busybox-static)" >&2; exit 1; }
file -L "$busybox" 2>/dev/null | grep -q "statically linked" || ldd "$busybox" 2>&1 | grep -q "not a dynamic" \
  || { echo "make_guest: $busybox is not static (install busybox-static)" >&2; exit 1; }
version=$(ls "$kernel_dir/lib/modules" | head -n1)
[ -n "$version" ] || { echo "make_guest: no modules under $kernel_dir/lib/modules" >&2; exit 1; }
modules="$kernel_dir/lib/modules/$version"
[ -s "$modules/modules.dep" ] || depmod -b "$kernel_dir" "$version"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,var/run,usr/bin,usr/sbin,lib/modules/$version}
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
ln -sf ../bin/busybox "$root/sbin/modprobe"

# The modules and what each needs first (modules.dep), plus the crypto and CRC helpers the kernel asks
# modprobe for at run time.
wanted=(kernel/drivers/nvme/host/nvme.ko kernel/drivers/net/ethernet/intel/e1000e/e1000e.ko kernel/drivers/net/virtio_net.ko
        kernel/drivers/virtio/virtio_pci.ko kernel/drivers/char/virtio_console.ko kernel/crypto/crct10dif_generic.ko kernel/crypto/crc64_rocksoft_generic.ko)
declare -A take=()
for m in "${wanted[@]}"; do
  line=$(grep "^$m:" "$modules/modules.dep" || true)
  [ -n "$line" ] || { echo "make_guest: $m is not in $version's modules" >&2; continue; }
  take[$m]=1
  for dep in ${line#*:}; do take[$dep]=1; done
done
for m in "${!take[@]}"; do
  mkdir -p "$root/lib/modules/$version/$(dirname "$m")"
  cp "$modules/$m" "$root/lib/modules/$version/$m"
done
cp "$modules"/modules.{order,builtin,builtin.modinfo} "$root/lib/modules/$version/" 2>/dev/null || true
depmod -b "$root" "$version"

if [ -n "$agent" ]; then
  cp "$agent" "$root/usr/sbin/yard-agent"
  # Every library at the path ldd gives, the loader (/lib64/ld-linux-x86-64.so.2) included.
  for lib in $(ldd "$agent" | awk '/=>/ {print $3} $1 ~ /^\// {print $1}'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
fi

cat > "$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
for m in nvme e1000e virtio_pci virtio_net virtio_console; do modprobe "$m" 2>/dev/null; done
ip link set lo up
if [ -e /sys/class/net/eth0 ]; then
  ip link set eth0 up
  ip addr add 10.0.2.15/24 dev eth0
  ip route add default via 10.0.2.2
fi
# The test bed's shell is on the virtio console (hvc0; the serial port's interrupt-driven output stalls
# under TCG until input arrives), without prompts or echo, so what a command prints is all that comes back.
# The kernel's messages stay on the serial port.
for i in $(seq 50); do [ -e /dev/hvc0 ] && break; sleep 0.1; done
exec < /dev/hvc0 > /dev/hvc0 2>&1
stty -echo
export PS1='' PS2=''
echo "SWITCHYARD-GUEST-READY $(uname -r)"
exec sh
INIT
chmod +x "$root/init"
(cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1 > "$out.tmp")
mv "$out.tmp" "$out"
echo "make_guest: $out ($(du -h "$out" | cut -f1), kernel $version${agent:+, with yard-agent})"
