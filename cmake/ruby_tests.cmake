# memprof_ruby_test(NAME SCRIPT): a Ruby test script, run by the machine's ruby (test NAME) and
# by every Ruby of the test matrix that src/ruby/CMakeLists.txt found (test NAME@3.4-static,
# ...), each with the extension built for it.
#
# A matrix Ruby has no gems installed (scripts/rubies builds it without network), so it borrows
# the pure-Ruby gems the tests need from the machine's Debian packages, through RUBYLIB.
# MEMPROF_EXT_DIR tells the tests' own ruby children where that Ruby's extension is (the -I
# they pass for lib/ would otherwise find the machine's lib/memprof/memprof.so first).
find_program(RUBY_EXECUTABLE ruby REQUIRED)
# Gems with a lib/ directory are borrowed whole; a default gem of the machine's Ruby that is a
# single file of its standard library (mutex_m, which minitest needs and Ruby 3.4 no longer has)
# is linked into a directory of its own, so that the rest of that library stays out of sight.
set(borrowed_files ${CMAKE_BINARY_DIR}/ruby-borrowed)
execute_process(
  COMMAND ${RUBY_EXECUTABLE} -rfileutils -e "
    dirs = %w[minitest mutex_m rack memory_profiler].map do |name|
      lib = Gem::Specification.find_by_name(name).full_gem_path + '/lib'
      next lib if File.directory?(lib)
      FileUtils.mkdir_p(ARGV[0])
      FileUtils.ln_sf($LOAD_PATH.resolve_feature_path(name).last, ARGV[0])
      ARGV[0]
    end
    print dirs.uniq.join(':')"
    ${borrowed_files}
  OUTPUT_VARIABLE MEMPROF_BORROWED_GEMS COMMAND_ERROR_IS_FATAL ANY)

function(memprof_ruby_test name script)
  cmake_parse_arguments(ARG "" "TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  add_test(NAME ${name} COMMAND ${RUBY_EXECUTABLE} -I ${CMAKE_SOURCE_DIR}/lib ${script})
  # MT_NO_PLUGINS: minitest would otherwise load every installed gem's minitest plugin.
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "MT_NO_PLUGINS=1" TIMEOUT ${ARG_TIMEOUT})
  get_property(matrix GLOBAL PROPERTY MEMPROF_RUBY_MATRIX)
  foreach(entry ${matrix})
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 ruby_name)
    list(GET entry 1 ruby)
    list(GET entry 2 ext_dir)
    add_test(NAME ${name}@${ruby_name}
             COMMAND ${ruby} -I ${ext_dir} -I ${CMAKE_SOURCE_DIR}/lib ${script})
    set_tests_properties(${name}@${ruby_name} PROPERTIES
      ENVIRONMENT "MT_NO_PLUGINS=1;MEMPROF_EXT_DIR=${ext_dir};RUBYLIB=${MEMPROF_BORROWED_GEMS}"
      TIMEOUT ${ARG_TIMEOUT})
  endforeach()
endfunction()

# memprof_ruby_test_names(OUT NAME): the tests memprof_ruby_test(NAME ...) made, NAME and its
# NAME@RUBY variants, for setting more properties on all of them.
function(memprof_ruby_test_names out name)
  set(names ${name})
  get_property(matrix GLOBAL PROPERTY MEMPROF_RUBY_MATRIX)
  foreach(entry ${matrix})
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 ruby_name)
    list(APPEND names ${name}@${ruby_name})
  endforeach()
  set(${out} ${names} PARENT_SCOPE)
endfunction()
