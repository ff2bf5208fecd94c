#pragma once
// The examples' command-line loop: every argument is an option, some followed by a value.
//
//   examples::for_each_option(argc, argv, [&](const std::string& name, auto value) {
//     if (name == "--steps") steps = std::stoul(value());
//     else return false;  // not an option of this program
//     return true;
//   });

#include <stdexcept>
#include <string>

namespace examples {

/// Calls `take(name, value)` for each option in argv[1..]: `value()` consumes and returns the
/// argument after the option (std::invalid_argument "NAME needs a value" when there is none);
/// `take` returns false for an option it does not know, which throws "unknown option NAME"
/// followed by `hint`.
template <class Take>
void for_each_option(int argc, char** argv, Take take, const std::string& hint = "") {
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(name + " needs a value");
      return argv[++i];
    };
    if (!take(name, value)) throw std::invalid_argument("unknown option " + name + hint);
  }
}

}  // namespace examples
