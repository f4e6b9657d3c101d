// Fuzz target: arbitrary bytes as what a Switchtec switch (or anything on its management port) answers:
// the transport header, topology info, GFMS database sections (PAX_ALL with its HVD and EP port
// sections, an HVD, fabric general, fabric port), bind/unbind requests (the emulator's side) and event
// batches, each decoded by fabric/switchtec/protocol. Whatever the bytes, every decoder returns a value or
// an error: never a crash, an out-of-bounds read or a hang.
//
// Built like the other targets (tests/CMakeLists.txt): a libFuzzer binary in the fuzz build, and a replay
// of the committed corpus (tests/fuzz/corpus/switchtec: real replies the emulator encodes) in every build.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fabric/switchtec/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  switchyard::switchtec::decodeAnything(std::span<const std::uint8_t>(data, size));
  return 0;
}
