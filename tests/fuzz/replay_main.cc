// The main of a fuzz target built with PROX_FUZZ_REPLAY: runs the target's harness once over every file
// named on the command line, in one process, with no sanitizer, so that valgrind can watch Debian's
// uninstrumented libraries (assimp, urdfdom, tinyxml, yaml-cpp, protobuf, gRPC) on a whole corpus.
// Prints each file before running it: the last one printed before a report is the input that caused it.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  int skipped = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {  // a running fuzzer may have reduced the unit away since the list was made
      std::fprintf(stderr, "skipped %s (cannot be read)\n", argv[i]);
      ++skipped;
      continue;
    }
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::fprintf(stderr, "replay %s\n", argv[i]);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "replayed %d inputs, skipped %d\n", argc - 1 - skipped, skipped);
  return 0;
}
