#ifndef FETCHRUN_CYAML_SHIM_H
#define FETCHRUN_CYAML_SHIM_H
// libyaml's event API is plain C with no variadics: Swift calls it directly.
#include <yaml.h>
#endif
