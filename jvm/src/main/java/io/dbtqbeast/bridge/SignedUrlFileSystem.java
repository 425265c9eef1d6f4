package io.dbtqbeast.bridge;

import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * A read-only Hadoop file system over signed HTTP(S) URLs, so that Spark's own parquet reader on
 * executors can read files of a store for which the cluster has no Hadoop connector.
 *
 * <p>A path carries everything a reader needs, because executors share nothing else with the
 * driver that planned the read: {@code qbeasthttp://signed/<length>/<url>/<name>}, where
 * {@code <length>} is the file's size in bytes (so no request is spent on it), {@code <url>} the
 * signed URL in unpadded base64url (it holds {@code /}, {@code ?} and {@code %}, which a Hadoop
 * path would rewrite) and {@code <name>} only a label for logs and the Spark UI. The URL grants
 * GET until it expires; whoever signs it decides for how long and over what.
 *
 * <p>Reads are ranged GETs ({@code Range: bytes=a-b}): a read of at least {@link #READ_AHEAD}
 * bytes (a column chunk) fetches exactly that range, a smaller one (a footer's length, a page
 * header) fetches {@code READ_AHEAD} bytes from its position and serves the following small reads
 * from them. Failed requests (I/O errors, HTTP 429 and 5xx) are retried with a growing pause;
 * a refusal (403: an expired or wrong signature) is not, and its message says so.
 */
public final class SignedUrlFileSystem extends FileSystem {
  public static final String SCHEME = "qbeasthttp";
  /** The Hadoop setting naming this class for the scheme. */
  public static final String IMPL_KEY = "fs." + SCHEME + ".impl";
  static final int READ_AHEAD = 1 << 20;
  private static final long BLOCK_SIZE = 128L * 1024 * 1024;
  private static final int ATTEMPTS = 5;
  private static final HttpClient CLIENT = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(30))
      .followRedirects(HttpClient.Redirect.NORMAL)
      .build();

  private URI uri;
  private Path workingDirectory;

  /** The path of a file of {@code length} bytes read from {@code url}, labelled {@code name}. */
  public static String pathOf(String url, long length, String name) {
    String encoded = Base64.getUrlEncoder().withoutPadding().encodeToString(url.getBytes(StandardCharsets.UTF_8));
    return SCHEME + "://signed/" + length + "/" + encoded + "/" + name;
  }

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
    uri = URI.create(SCHEME + "://" + (name.getAuthority() == null ? "signed" : name.getAuthority()));
    workingDirectory = new Path(uri.toString() + "/");
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }

  @Override
  public URI getUri() {
    return uri;
  }

  private static String[] parts(Path path) throws FileNotFoundException {
    String[] parts = path.toUri().getPath().split("/");
    // "", length, url, name
    if (parts.length != 4 || parts[1].isEmpty() || parts[2].isEmpty()) {
      throw new FileNotFoundException(
          "qbeast: " + path + " is not a signed-URL file (" + SCHEME + "://signed/<length>/<url>/<name>)");
    }
    return parts;
  }

  static long lengthOf(Path path) throws FileNotFoundException {
    try {
      return Long.parseLong(parts(path)[1]);
    } catch (NumberFormatException e) {
      throw new FileNotFoundException("qbeast: " + path + " has no file length");
    }
  }

  static URI urlOf(Path path) throws FileNotFoundException {
    try {
      return URI.create(new String(Base64.getUrlDecoder().decode(parts(path)[2]), StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) {
      throw new FileNotFoundException("qbeast: " + path + " holds no readable URL");
    }
  }

  @Override
  public FSDataInputStream open(Path path, int bufferSize) throws IOException {
    String[] parts = parts(path);
    return new FSDataInputStream(new RangeStream(urlOf(path), lengthOf(path), parts[3]));
  }

  @Override
  public FileStatus getFileStatus(Path path) throws IOException {
    return new FileStatus(lengthOf(path), false, 1, BLOCK_SIZE, 0, makeQualified(path));
  }

  @Override
  public FileStatus[] listStatus(Path path) throws IOException {
    return new FileStatus[] {getFileStatus(path)};
  }

  @Override
  public FSDataOutputStream create(Path path, FsPermission permission, boolean overwrite, int bufferSize,
      short replication, long blockSize, Progressable progress) throws IOException {
    throw readOnly("create", path);
  }

  @Override
  public FSDataOutputStream append(Path path, int bufferSize, Progressable progress) throws IOException {
    throw readOnly("append to", path);
  }

  @Override
  public boolean rename(Path source, Path target) throws IOException {
    throw readOnly("rename", source);
  }

  @Override
  public boolean delete(Path path, boolean recursive) throws IOException {
    throw readOnly("delete", path);
  }

  @Override
  public boolean mkdirs(Path path, FsPermission permission) throws IOException {
    throw readOnly("create a folder at", path);
  }

  private static IOException readOnly(String what, Path path) {
    return new IOException("qbeast: cannot " + what + " " + path + ": signed-URL files are read-only");
  }

  @Override
  public Path getWorkingDirectory() {
    return workingDirectory;
  }

  @Override
  public void setWorkingDirectory(Path directory) {
    workingDirectory = directory;
  }

  /** A seekable stream over one URL, reading by ranges (see the class comment). */
  static final class RangeStream extends FSInputStream {
    private final URI url;
    private final long length;
    private final String name;
    private long position;
    private byte[] buffer = new byte[0];
    private long bufferStart;
    private boolean closed;

    RangeStream(URI url, long length, String name) {
      this.url = url;
      this.length = length;
      this.name = name;
    }

    @Override
    public synchronized void seek(long target) throws IOException {
      if (target < 0 || target > length) {
        throw new EOFException("qbeast: seek to " + target + " outside " + name + " (" + length + " bytes)");
      }
      position = target;
    }

    @Override
    public synchronized long getPos() {
      return position;
    }

    @Override
    public boolean seekToNewSource(long target) {
      return false;
    }

    @Override
    public synchronized int available() {
      return (int) Math.min(Integer.MAX_VALUE, length - position);
    }

    @Override
    public synchronized int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public synchronized int read(byte[] target, int offset, int wanted) throws IOException {
      if (closed) {
        throw new IOException("qbeast: " + name + " is closed");
      }
      if (wanted == 0) {
        return 0;
      }
      if (position >= length) {
        return -1;
      }
      int count = (int) Math.min(wanted, length - position);
      if (position >= bufferStart && position + count <= bufferStart + buffer.length) {
        System.arraycopy(buffer, (int) (position - bufferStart), target, offset, count);
      } else if (count >= READ_AHEAD) {
        fetch(position, target, offset, count);
      } else {
        int size = (int) Math.min(READ_AHEAD, length - position);
        byte[] fetched = new byte[size];
        fetch(position, fetched, 0, size);
        buffer = fetched;
        bufferStart = position;
        System.arraycopy(buffer, 0, target, offset, count);
      }
      position += count;
      return count;
    }

    /** Bytes {@code [start, start + count)} of the file into {@code target} at {@code offset}. */
    private void fetch(long start, byte[] target, int offset, int count) throws IOException {
      HttpRequest request = HttpRequest.newBuilder(url)
          .timeout(Duration.ofMinutes(5))
          .header("Range", "bytes=" + start + "-" + (start + count - 1))
          .GET()
          .build();
      IOException last = null;
      for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
        try {
          HttpResponse<InputStream> response = CLIENT.send(request, HttpResponse.BodyHandlers.ofInputStream());
          int status = response.statusCode();
          try (InputStream body = response.body()) {
            if (status == 206 || (status == 200 && start == 0)) {
              readFully(body, target, offset, count);
              return;
            }
            String reason = new String(body.readNBytes(512), StandardCharsets.UTF_8);
            if (status == 403 || status == 401) {
              throw new RefusedException("qbeast: reading " + name + " was refused (HTTP " + status
                  + "): its signed URL has expired or its signature is not accepted; the planner signs "
                  + "URLs for spark.qbeast.storage.signedUrlSeconds (a query that runs longer needs "
                  + "more), and they end with the credentials that signed them. Server said: " + reason);
            }
            if (status == 404) {
              throw new FileNotFoundException("qbeast: " + name + " is gone from the store (HTTP 404)");
            }
            String failure = "qbeast: reading bytes " + start + "-" + (start + count - 1) + " of " + name
                + " failed: HTTP " + status + ": " + reason;
            if (status != 429 && status < 500) {
              throw new RefusedException(failure);
            }
            last = new IOException(failure);
          }
        } catch (RefusedException | FileNotFoundException e) {
          throw e;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("qbeast: reading " + name + " was interrupted", e);
        } catch (IOException e) {
          last = e;
        }
        if (attempt < ATTEMPTS) {
          try {
            Thread.sleep(200L << (attempt - 1));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("qbeast: reading " + name + " was interrupted", e);
          }
        }
      }
      throw last;
    }

    private void readFully(InputStream body, byte[] target, int offset, int count) throws IOException {
      int done = 0;
      while (done < count) {
        int n = body.read(target, offset + done, count - done);
        if (n < 0) {
          throw new EOFException("qbeast: " + name + " ended after " + done + " of " + count + " bytes asked for");
        }
        done += n;
      }
    }

    @Override
    public synchronized void close() {
      closed = true;
      buffer = new byte[0];
    }
  }

  /** An answer the store would give again (a refusal, a bad request): not retried. */
  private static final class RefusedException extends IOException {
    RefusedException(String message) {
      super(message);
    }
  }
}
