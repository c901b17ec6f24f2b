// libsystemc's own main() calls sc_main, so the shared library needs the
// symbol. tpusim never enters SystemC that way: the CLI, the Python module and
// the tests drive simulations through simulate() in driver.hpp.
#include <cstdio>

extern "C" int sc_main(int, char*[]);

int sc_main(int, char*[]) {
  std::fputs("tpusim: sc_main is not an entry point; use the tpusim CLI\n", stderr);
  return 1;
}
