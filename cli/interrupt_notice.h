// While yardctl follows an operation, Ctrl-C ends yardctl, not the operation: the handler says so and how to
// follow it again, instead of leaving without a word (then exits 130, as a shell expects of SIGINT).
#pragma once

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>

namespace yardctl {

class InterruptNotice {
 public:
  explicit InterruptNotice(const std::string& operationId) {
    const std::string text = fmt::format(
        "\ninterrupted: {0} goes on in yardd (Ctrl-C stops only yardctl); follow it with `yardctl ops wait {0}` or see "
        "`yardctl ops show {0}`\n",
        operationId);
    const std::size_t n = std::min(text.size(), message().size() - 1);
    std::memcpy(message().data(), text.data(), n);
    length() = n;
    struct sigaction action {};
    action.sa_handler = &InterruptNotice::onInterrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptNotice() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptNotice(const InterruptNotice&) = delete;
  InterruptNotice& operator=(const InterruptNotice&) = delete;

 private:
  // Async-signal-safe: the text is formatted beforehand; the handler only writes it and leaves.
  static void onInterrupt(int) {
    const ssize_t ignored = ::write(STDERR_FILENO, message().data(), length());
    (void)ignored;
    ::_exit(130);
  }
  static std::array<char, 512>& message() {
    static std::array<char, 512> text{};
    return text;
  }
  static std::size_t& length() {
    static std::size_t n = 0;
    return n;
  }
  struct sigaction previous_ {};
};

}  // namespace yardctl
