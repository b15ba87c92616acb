/* load_util.h — small helpers shared by the loaders (URDF, scene files):
 * error messages, roll-pitch-yaw rotations, strict number parsing, paths and
 * package:// resolution.
 *
 * None of these allocate or keep state; all of them are safe on bad input and
 * report failure by return value.
 */
#ifndef KHZ_LOAD_UTIL_H
#define KHZ_LOAD_UTIL_H

#include <libxml/tree.h>
#include <stddef.h>

#if defined(__GNUC__)
#define KHZ_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KHZ_PRINTF(f, a)
#endif

/* Formats a message into err (truncated to errsz, always NUL-terminated; err
 * may be NULL or errsz 0). Always returns -1, so that a loader can write
 * `return khz_loadError(err, errsz, "...", ...);`. */
int khz_loadError(char *err, size_t errsz, const char *fmt, ...) KHZ_PRINTF(3, 4);

/* URDF fixed-axis roll-pitch-yaw to a unit quaternion (w, x, y, z):
 * R = Rz(yaw) Ry(pitch) Rx(roll), rpy = (roll, pitch, yaw) in radians. */
void khz_rpy2quat(const double rpy[3], double quat[4]);

/* The same rotation as a row-major 3x3 matrix. */
void khz_rpy2mat(const double rpy[3], double mat[9]);

/* Composes two poses: (pos, quat) = A * B, where B = (pb, qb) is given in the
 * frame A = (pa, qa); quaternions (w, x, y, z), qa normalised here. The outputs
 * may alias the inputs. */
void khz_pose_compose(double pos[3], double quat[4], const double pa[3], const double qa[4],
                      const double pb[3], const double qb[4]);

/* Parses exactly n finite numbers separated by white space from s into out.
 * Returns 0 on success, -1 when s is NULL, holds fewer or more numbers, holds
 * something that is not a number, or holds NaN or an infinity (out is then
 * partly written). */
int khz_parse_doubles(const char *s, double *out, int n);

/* Writes the directory part of path into out ("." when path has no '/', "/"
 * for a file in the root). Returns 0, or -1 when out is too small. */
int khz_path_dirname(char *out, size_t outsz, const char *path);

/* Joins dir and rel into out with one '/' between; rel is copied as is when
 * it is absolute or dir is NULL or empty. Returns 0, or -1 when out is too
 * small. */
int khz_path_join(char *out, size_t outsz, const char *dir, const char *rel);

/* Returns 1 when path names an existing regular file that can be read, else 0. */
int khz_file_exists(const char *path);

/* Reads a whole file into a malloc'ed, NUL-terminated buffer (*buf, *len
 * without the NUL; free it). Returns 0,
 * or -1 with "PATH: problem" in err. */
int khz_read_file(const char *path, char **buf, size_t *len, char *err, size_t errsz);

/* Resolves a file reference as found in a model file into an existing file:
 *   - "package://NAME/REST": each ':'-separated entry DIR of package_path is
 *     tried as DIR/NAME/REST and, when DIR's last component is NAME, as
 *     DIR/REST. When package_path is NULL the search path is the environment
 *     variable KHZ_PACKAGE_PATH, then ROS_PACKAGE_PATH, then basedir and each of
 *     its parents up to the root.
 *   - "file://PATH": PATH, then as below.
 *   - an absolute path: itself; a relative path: joined to basedir (the
 *     current directory when basedir is NULL).
 * On success writes the found path into out and returns 0. On failure returns
 * -1 and, when tried is not NULL, writes the paths tried into it separated by
 * ", " (truncated to triedsz). A name too long for out counts as not found. */
int khz_resolve_path(char *out, size_t outsz, const char *uri, const char *basedir,
                     const char *package_path, char *tried, size_t triedsz);

/* Attribute strings of one XML parse, kept until the parse is done (the URDF
 * and MJCF loaders point into them). */
typedef struct khzXmlStrings {
  xmlChar **strs;
  int n, cap;
} khzXmlStrings;

/* An attribute's value, owned by the pool (NULL when absent or out of memory). */
const char *khz_xml_attr(khzXmlStrings *pool, xmlNodePtr node, const char *name);

/* Frees every string of the pool. */
void khz_xml_strings_free(khzXmlStrings *pool);

#endif /* KHZ_LOAD_UTIL_H */
