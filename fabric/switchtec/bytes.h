// The Switchtec wire format uses the shared byte buffers (fabric/bytes.h).
#pragma once

#include "fabric/bytes.h"

namespace switchyard::switchtec {

using wire::ByteReader;
using wire::Bytes;
using wire::ByteWriter;

}  // namespace switchyard::switchtec
