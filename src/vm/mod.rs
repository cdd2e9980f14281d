//! Booting a Linux kernel in QEMU on the host's own root filesystem.
//!
//! A kernel config (issue 17, docs/kernels.md) runs its workloads inside a
//! VM booted for it, so that the thing compared is the kernel and not the
//! userland: the guest sees the host's root, read-only (enforced on the
//! host by a read-only bind mount that only virtiofsd's private mount
//! namespace holds), under an overlay whose writable layer is guest RAM.
//! One boot runs one command in a chroot of that root (the guest sysdelta)
//! and gives the host a byte channel to it over virtio-serial.
//!
//! The parts, in the order a boot needs them:
//! * [`image`]: what a kernel image is (its version from the bzImage header).
//! * [`modules`]: which `.ko` files of the image's modules directory the
//!   guest needs for virtiofs, overlay, virtio-serial and pvpanic.
//! * [`initramfs`]: the cpio with static busybox, those modules and `/init`.
//! * [`accel`]: KVM when it works, else TCG, and why.
//! * [`launch`]: virtiofsd and QEMU for one boot, the console and the channel.
//! * [`port`]: the guest side of the channel (runs inside the VM).

pub mod accel;
mod command;
mod console;
pub mod image;
pub mod initramfs;
pub mod launch;
pub mod machine;
pub mod machine_launch;
pub mod modules;
pub mod port;

pub use accel::Accel;
pub use image::KernelImage;
pub use launch::{Boot, VmSpec};

/// The name of the virtio-serial port that carries the channel.
pub const PORT_NAME: &str = "org.sysdelta.runs";
