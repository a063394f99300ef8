// proximity::remote from an installed package: a client of a port where no proximityd listens must
// report the failed call as a Status naming the target (and link gRPC through the package).
#include <chrono>
#include <cstdio>
#include <string>

#include "proximity/clients/remote_validity.h"

int main() {
  proximity::clients::RemoteOptions options;
  options.target = "127.0.0.1:1";
  options.deadline = std::chrono::milliseconds(2000);
  auto remote = proximity::clients::RemoteScene::Connect(options);
  if (!remote.ok()) {
    std::printf("FAIL: Connect: %s\n", remote.error().message.c_str());
    return 1;
  }
  auto info = remote.value()->Info();
  const bool ok = !info.ok() && info.error().message.find("proximityd at 127.0.0.1:1") != std::string::npos;
  std::printf("%s: remote client without a server: %s\n", ok ? "ok  " : "FAIL",
              info.ok() ? "answered" : info.error().message.c_str());
  return ok ? 0 : 1;
}
