// What yardctl prints may hold strings that came from anyone (a refused request's raw name in the audit trail,
// labels, messages): printed as they are, terminal escape sequences could rewrite the screen and a
// right-to-left override could reorder what an operator reads. SafeTerminal puts a filter on a stream that
// shows every control character (but newline and tab) as \xHH and every bidirectional override or isolate
// (U+202A-U+202E, U+2066-U+2069) as \uHHHH, and passes everything else through. In JSON those spellings are
// escapes of the same characters, so -o json stays valid and means the same.
#pragma once

#include <memory>
#include <ostream>
#include <streambuf>

namespace yardctl {

class SafeTerminal {
 public:
  // Filters `stream` until this object is destroyed.
  explicit SafeTerminal(std::ostream& stream);
  ~SafeTerminal();
  SafeTerminal(const SafeTerminal&) = delete;
  SafeTerminal& operator=(const SafeTerminal&) = delete;

 private:
  class Filter;
  std::ostream& stream_;
  std::streambuf* original_;
  std::unique_ptr<Filter> filter_;
};

}  // namespace yardctl
