// ThreadSanitizer suppressions for the service tests. Debian's gRPC, gpr and Abseil are not built with
// TSan, so their internal synchronisation (gpr/absl primitives, atomics in uninstrumented code) is
// invisible to it and every call through them reports false races. Races in our code, including our
// handoff of responses between the worker pool and gRPC (std::mutex / condition_variable), remain
// visible.
extern "C" const char* __tsan_default_suppressions() {
  return "race:libgrpc.so\n"
         "race:libgrpc++.so\n"
         "race:libgrpc++_reflection.so\n"
         "race:libgpr.so\n"
         "race:libabsl_\n"
         "deadlock:libgrpc.so\n";
}
