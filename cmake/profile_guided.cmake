# Profile-guided optimization (GCC) of the heap analyzer, whose speed is a target of its own
# (docs/heap.md). The Makefile builds memprof twice: a profiling tree configured with
# MEMPROF_PROFILE_GENERATE=DIR, which scripts/pgo-train runs on a training heap (counts into
# DIR/*.gcda), then the real tree with MEMPROF_PROFILE_USE=DIR. Both trees must compile these
# targets with the same flags, so the Makefile gives both the same options.
#
# memprof_profile_guided(TARGET) marks a library as trained. Only the analyzer's libraries are:
# code that runs inside other people's processes (the agent, the hooks) keeps the plain build.
set(MEMPROF_PROFILE_GENERATE "" CACHE PATH "Build the analyzer with profiling counters written to this directory")
set(MEMPROF_PROFILE_USE "" CACHE PATH "Build the analyzer with the profile scripts/pgo-train wrote to this directory")
if((MEMPROF_PROFILE_GENERATE OR MEMPROF_PROFILE_USE) AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  message(WARNING "profile-guided optimization needs GCC's profile format; built without it")
  set(MEMPROF_PROFILE_GENERATE "")
  set(MEMPROF_PROFILE_USE "")
endif()

function(memprof_profile_guided target)
  # The profile files are named by each object's path inside its tree, so that the real tree
  # finds the profiling tree's counts.
  set(prefix -fprofile-prefix-path=${CMAKE_BINARY_DIR})
  if(MEMPROF_PROFILE_GENERATE)
    # Atomic counters: the analyzer runs on several threads.
    target_compile_options(${target} PRIVATE -fprofile-generate=${MEMPROF_PROFILE_GENERATE}
                           -fprofile-update=atomic ${prefix})
    target_link_options(${target} INTERFACE -fprofile-generate)
  elseif(MEMPROF_PROFILE_USE)
    # Code the training did not run is compiled as without a profile (partial training), and a
    # function changed since the training keeps the plain build (no coverage-mismatch error;
    # `make` trains again when the analyzer's sources change). A missing profile stays a
    # warning (-Wmissing-profile, an error in CI): every object of these targets has one when
    # the two trees agree, so it means the training did not reach this build.
    target_compile_options(${target} PRIVATE -fprofile-use=${MEMPROF_PROFILE_USE} ${prefix}
                           -fprofile-partial-training -Wno-coverage-mismatch)
    # A new training recompiles the target.
    get_target_property(sources ${target} SOURCES)
    set_source_files_properties(${sources} PROPERTIES OBJECT_DEPENDS ${MEMPROF_PROFILE_USE}/trained)
  endif()
endfunction()
