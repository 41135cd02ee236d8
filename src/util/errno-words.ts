/**
 * A system error's code in the words a person reads in `ls` or a shell (`permission denied`), for messages
 * that name a file: an operator acts on the words, not on `EACCES`.
 */
const WORDS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a part of the path is not a directory',
  EISDIR: 'a directory, not a file',
  ELOOP: 'a loop of symbolic links',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EMFILE: 'too many open files (raise LimitNOFILE or ulimit -n)',
  ENFILE: 'too many open files (raise LimitNOFILE or ulimit -n)',
  ENAMETOOLONG: 'the name is too long',
  EEXIST: 'already exists',
};

/** The words for `code`, or undefined when it is not a file system error a person can act on. */
export function errnoWords(code: string | undefined): string | undefined {
  return code === undefined ? undefined : WORDS[code];
}
