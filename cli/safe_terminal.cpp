#include "cli/safe_terminal.h"

#include <cstdio>
#include <string>

namespace yardctl {

class SafeTerminal::Filter final : public std::streambuf {
 public:
  explicit Filter(std::streambuf* out) : out_(out) {}
  ~Filter() override { flushPending(); }

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    const auto byte = static_cast<unsigned char>(traits_type::to_char_type(ch));
    // A bidi control is E2 80 AA..AE or E2 81 A6..A9 in UTF-8: hold E2 and the next byte until the third says.
    if (!pending_.empty()) {
      pending_.push_back(static_cast<char>(byte));
      if (pending_.size() == 2) {
        const auto second = static_cast<unsigned char>(pending_[1]);
        if (second == 0x80 || second == 0x81) return ch;
        return flushPending() ? ch : traits_type::eof();
      }
      const auto second = static_cast<unsigned char>(pending_[1]);
      if ((second == 0x80 && byte >= 0xAA && byte <= 0xAE) || (second == 0x81 && byte >= 0xA6 && byte <= 0xA9)) {
        const unsigned code = 0x2000u + ((second & 0x3Fu) << 6) + (byte & 0x3Fu);
        pending_.clear();
        return put(fmt("\\u%04x", code)) ? ch : traits_type::eof();
      }
      return flushPending() ? ch : traits_type::eof();
    }
    if (byte == 0xE2) {
      pending_.push_back(static_cast<char>(byte));
      return ch;
    }
    if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7F) return put(fmt("\\x%02x", byte)) ? ch : traits_type::eof();
    return traits_type::eq_int_type(out_->sputc(static_cast<char>(byte)), traits_type::eof()) ? traits_type::eof() : ch;
  }
  int sync() override {
    if (!flushPending()) return -1;
    return out_->pubsync();
  }

 private:
  static std::string fmt(const char* format, unsigned value) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, format, value);
    return buffer;
  }
  bool put(const std::string& s) { return out_->sputn(s.data(), static_cast<std::streamsize>(s.size())) == static_cast<std::streamsize>(s.size()); }
  bool flushPending() {
    const std::string held = std::move(pending_);
    pending_.clear();
    return held.empty() || put(held);
  }

  std::streambuf* out_;
  std::string pending_;  // a started UTF-8 sequence that may be a bidi control
};

SafeTerminal::SafeTerminal(std::ostream& stream)
    : stream_(stream), original_(stream.rdbuf()), filter_(std::make_unique<Filter>(original_)) {
  stream_.rdbuf(filter_.get());
}

SafeTerminal::~SafeTerminal() {
  stream_.flush();
  stream_.rdbuf(original_);
}

}  // namespace yardctl
