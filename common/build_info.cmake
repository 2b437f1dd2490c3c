# Writes build_info.cpp with the commit checked out now. Run at every build (not only at
# configure time), so a rebuilt binary never reports the commit its build folder was configured
# at. configure_file() leaves the output untouched when nothing changed, so nothing recompiles.
#   cmake -DSRC=in -DDST=out -DVERSION=x.y.z -DSOURCE_DIR=repo -P build_info.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE ACCELMATRIX_GIT_COMMIT
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT ACCELMATRIX_GIT_COMMIT)
  set(ACCELMATRIX_GIT_COMMIT "unknown")
endif()
set(PROJECT_VERSION ${VERSION})
configure_file(${SRC} ${DST} @ONLY)
