// A shared library opened when a command first needs it instead of linked into memprof.
//
// Every linked library is mapped and relocated at each start of memprof, used or not. The ones
// only some commands need (libdw and the libraries it loads, for source lines; libpng, for
// heapmap; zlib, zstd and xz, for compressed files) cost 1.2 of the 7 ms that `memprof --version`
// took on the VMs we measure (docs/heap.md, "twelfth pass"). Opened here, they are still
// Debian's shared libraries, updated with the system.
//
//   #define ZSTD_FUNCTIONS(X) X(ZSTD_createDCtx) X(ZSTD_freeDCtx)
//   MEMPROF_RUNTIME_LIBRARY(ZstdLibrary, "libzstd.so.1", ZSTD_FUNCTIONS);
//   const Result<ZstdLibrary>& zstd = ZstdLibrary::get();
//   if (zstd) ZSTD_DCtx* context = zstd->ZSTD_createDCtx();
//
// Each pointer has the name and, through `decltype`, the type that the library's own header
// declares, so calls read as the library's documentation writes them and are type-checked. The
// handle is never closed: the pointers taken from it stay valid for the whole process.
#pragma once

#include <dlfcn.h>

#include <string>
#include <utility>

#include "core/util/result.h"

namespace memprof {

class RuntimeLibrary {
 public:
  // dlopen of `soname` (e.g. "libzstd.so.1"), or why it could not be opened.
  static Result<RuntimeLibrary> open(const char* soname) {
    void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      return err("cannot open {} ({})", soname, why != nullptr ? why : "not found");
    }
    return RuntimeLibrary(soname, handle);
  }

  // Points `function` at the library's symbol `name`.
  template <typename Function>
  Status bind(Function*& function, const char* name) const {
    void* symbol = ::dlsym(handle_, name);
    if (symbol == nullptr) return err("{} has no {} (an older version?)", soname_, name);
    function = reinterpret_cast<Function*>(symbol);
    return ok_status();
  }

 private:
  RuntimeLibrary(std::string soname, void* handle) : soname_(std::move(soname)), handle_(handle) {}

  std::string soname_;
  void* handle_;
};

}  // namespace memprof

// Defines struct `Name`: one function pointer per function of `LIST` (an X-macro:
// `#define LIST(X) X(deflate) X(inflate)`), and `Name::get()`: the library `soname` opened and
// every pointer bound, once per process, or why that could not be done.
#define MEMPROF_RUNTIME_LIBRARY(Name, soname, LIST)                                     \
  struct Name {                                                                         \
    LIST(MEMPROF_RUNTIME_LIBRARY_MEMBER)                                                \
    static const ::memprof::Result<Name>& get() {                                       \
      static const ::memprof::Result<Name> opened = []() -> ::memprof::Result<Name> {   \
        MEMPROF_TRY(library, ::memprof::RuntimeLibrary::open(soname));                  \
        Name api{};                                                                     \
        LIST(MEMPROF_RUNTIME_LIBRARY_BIND)                                              \
        return api;                                                                     \
      }();                                                                              \
      return opened;                                                                    \
    }                                                                                   \
  }
#define MEMPROF_RUNTIME_LIBRARY_MEMBER(function) decltype(&::function) function;
#define MEMPROF_RUNTIME_LIBRARY_BIND(function) MEMPROF_TRY_STATUS(library.bind(api.function, #function));
