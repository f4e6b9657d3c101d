#include "cli/list_watch.h"

#include <CLI/CLI.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

namespace yardctl {

CLI::Option* addWatchFlag(CLI::App* command, bool& watch) {
  return command->add_flag("-w,--watch", watch, "Keep the list on screen: print it again whenever yardd reports a change, until Ctrl-C");
}

int watchList(const CommandContext& ctx, const std::function<int()>& printList) {
  Client& client = ctx.client();  // made here, before the reader thread shares it
  if (int rc = printList(); rc != kExitOk) return rc;
  std::cout << std::flush;

  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    std::string last;  // the newest event since the last redraw ("" when none)
    bool ended = false;
    grpc::Status status;
  };
  auto shared = std::make_shared<Shared>();
  grpc::ClientContext call;
  client.prepare(call, false);  // no deadline: the stream lasts until Ctrl-C
  auto reader = client.stub().Watch(&call, pb::WatchRequest{});
  std::thread events([&reader, shared] {
    pb::Event e;
    while (reader->Read(&e)) {
      std::lock_guard lock(shared->mutex);
      shared->last = e.type() + (e.subject().empty() ? "" : " " + e.subject());
      shared->changed.notify_all();
    }
    grpc::Status status = reader->Finish();
    std::lock_guard lock(shared->mutex);
    shared->ended = true;
    shared->status = std::move(status);
    shared->changed.notify_all();
  });
  int rc = kExitOk;
  while (rc == kExitOk) {
    std::string what;
    {
      std::unique_lock lock(shared->mutex);
      shared->changed.wait(lock, [&] { return shared->ended || !shared->last.empty(); });
      if (shared->ended && shared->last.empty()) break;
      // The rest of the burst: one redraw for a compose's handful of events.
      shared->changed.wait_for(lock, std::chrono::milliseconds(250), [&] { return shared->ended; });
      what = std::exchange(shared->last, std::string());
    }
    if (ctx.g.format() == Format::kTable)
      std::cout << fmt::format("\n--- {:%H:%M:%S} after {}\n", std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()), what);
    rc = printList();
    std::cout << std::flush;
  }
  call.TryCancel();
  events.join();
  if (rc != kExitOk) return rc;
  if (!shared->status.ok() && shared->status.error_code() != grpc::StatusCode::CANCELLED) return client.failed(shared->status);
  return kExitOk;
}

}  // namespace yardctl
