// A TCP port on 127.0.0.1 that nothing listens on now, for a process a test starts and must name a port
// to in advance (cse, etcd, QEMU's forwards). Another process may take it before ours does: callers that
// can, check that their process is the one listening (jackrabbit_cse.h does).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace switchyard::testing {

inline int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

}  // namespace switchyard::testing
