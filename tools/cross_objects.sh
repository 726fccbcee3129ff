# Sourced by the cross-build checks (check_aarch64.sh, check_aarch64_python.sh, check_wine.sh):
# compiles every native/src/*.cpp (and the files in $EXTRA_SOURCES) with $CXX $FLAGS into
# $OBJ_DIR (default $OUT), $JOBS at a time, rebuilding an object only when its source or a header
# it includes (from -MMD) is newer; then OBJS lists the objects of the current sources (not stale
# objects of deleted ones).
#   CXX=... FLAGS=... OUT=... JOBS=... [OBJ_DIR=...] [EXTRA_SOURCES=...]; . tools/cross_objects.sh
OBJ_DIR=${OBJ_DIR:-$OUT}
mkdir -p "$OBJ_DIR"
export CXX FLAGS OBJ_DIR
cross_sources() { find native/src -name '*.cpp' | sort; for f in ${EXTRA_SOURCES:-}; do echo "$f"; done; }
cross_sources | xargs -P "$JOBS" -I{} sh -c '
  o="$OBJ_DIR/$(echo {} | tr / _).o"; d="${o%.o}.d"
  if [ -e "$o" ] && [ -e "$d" ]; then
    stale=$(sed -e "s/^[^:]*://" -e "s/\\\\$//" "$d" | tr " " "\n" | grep -v "^$" | while read -r f; do [ "$f" -nt "$o" ] && echo "$f"; done)
    [ -z "$stale" ] && exit 0
  fi
  $CXX $FLAGS -MMD -MP -c {} -o "$o"'
OBJS=$(cross_sources | sed "s|/|_|g; s|^|$OBJ_DIR/|; s|\.cpp$|.cpp.o|")
