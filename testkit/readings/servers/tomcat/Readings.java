// The Tomcat upstream of the readings suite: plain servlets mapped in
// WEB-INF/web.xml as a web application maps them, served by Debian's
// Tomcat 10 with its defaults (path parameters stripped from each segment,
// slashes merged, the path decoded once and normalized before mapping).
// Each protected resource answers its marker.
package readings;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/** The servlets and the filter web.xml names. */
public final class Readings {
    private Readings() {}

    /**
     * Answers GET with its "get" init parameter, and DELETE with "delete"
     * when it has one (else 405, as HttpServlet does). A text that starts
     * with READINGS-MARKER also travels in x-readings-marker, for HEAD.
     */
    public static final class Text extends HttpServlet {
        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            answer(resp, getInitParameter("get"));
        }

        @Override
        protected void doDelete(HttpServletRequest req, HttpServletResponse resp) throws ServletException, IOException {
            String text = getInitParameter("delete");
            if (text == null) {
                super.doDelete(req, resp);
            } else {
                answer(resp, text);
            }
        }

        private static void answer(HttpServletResponse resp, String text) throws IOException {
            String prefix = "READINGS-MARKER ";
            if (text.startsWith(prefix)) {
                resp.setHeader("x-readings-marker", text.substring(prefix.length()));
            }
            resp.setContentType("text/plain");
            resp.getWriter().write(text + "\n");
        }
    }

    /** Names the server on every response it makes, errors included. */
    public static final class ServerName implements Filter {
        @Override
        public void doFilter(ServletRequest req, ServletResponse resp, FilterChain chain) throws IOException, ServletException {
            ((HttpServletResponse) resp).setHeader("x-readings-server", "tomcat");
            chain.doFilter(req, resp);
        }
    }
}
