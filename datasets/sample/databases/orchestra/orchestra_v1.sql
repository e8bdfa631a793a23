-- Sample database 'orchestra', file orchestra_v1.sql: same schema as every file in this folder, different rows.
-- Written for baton's sample set; materialized into orchestra/<file>.sqlite by baton-data.

CREATE TABLE musician (
    musician_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    instrument TEXT,
    section TEXT,
    joined_year INTEGER,
    salary INTEGER
);

CREATE TABLE concert (
    concert_id INTEGER PRIMARY KEY,
    title TEXT,
    venue TEXT,
    city TEXT,
    concert_date TEXT,
    attendance INTEGER
);

CREATE TABLE performance (
    concert_id INTEGER NOT NULL REFERENCES concert (concert_id),
    musician_id INTEGER NOT NULL REFERENCES musician (musician_id),
    is_soloist INTEGER NOT NULL,
    PRIMARY KEY (concert_id, musician_id)
);

INSERT INTO musician VALUES (1, 'Elif Kovac', 'double bass', 'strings', 2021, 50500);
INSERT INTO musician VALUES (2, 'Felix Sato', 'violin', 'strings', 2010, 61000);
INSERT INTO musician VALUES (3, 'Priya Strand', 'double bass', 'strings', 2014, 82500);
INSERT INTO musician VALUES (4, 'Noor Moreau', 'trombone', 'brass', 2014, 58000);
INSERT INTO musician VALUES (5, 'Yuki Moreau', 'violin', 'strings', 2020, 48000);
INSERT INTO musician VALUES (6, 'Noor Novak', 'timpani', 'percussion', 2013, 49000);
INSERT INTO musician VALUES (7, 'Jonas Kovac', 'timpani', 'percussion', 2018, 87000);
INSERT INTO musician VALUES (8, 'Elif Brandt', 'trombone', 'brass', 2000, 53000);
INSERT INTO musician VALUES (9, 'Priya Lindahl', 'timpani', 'percussion', 1998, 84500);
INSERT INTO musician VALUES (10, 'Yuki Adeyemi', 'double bass', 'strings', 2016, 71000);
INSERT INTO musician VALUES (11, 'Felix Ricci', 'flute', 'woodwinds', 2016, 43500);
INSERT INTO musician VALUES (12, 'Yuki Oyelaran', 'timpani', 'percussion', 2007, 39500);
INSERT INTO musician VALUES (13, 'Ilse Brandt', 'violin', 'strings', 2000, 38000);
INSERT INTO musician VALUES (14, 'Priya Sato', 'trumpet', 'brass', 2002, 83500);

INSERT INTO concert VALUES (1, 'Youth Showcase', 'Philharmonie', 'Berlin', '2023-11-23', 1200);
INSERT INTO concert VALUES (2, 'Dvorak Weekend', 'Konzerthaus', 'Vienna', '2023-07-03', 970);
INSERT INTO concert VALUES (3, 'Winter Lights', 'Konzerthaus', 'Vienna', '2023-09-05', 1280);
INSERT INTO concert VALUES (4, 'Brahms Evening', 'Musikverein Hall', 'Vienna', '2023-02-25', 1170);
INSERT INTO concert VALUES (5, 'Summer Serenade', 'Philharmonie', 'Berlin', '2023-11-12', 1700);
INSERT INTO concert VALUES (6, 'Chamber Night', 'Philharmonie', 'Berlin', '2023-11-14', 2300);
INSERT INTO concert VALUES (7, 'Autumn Festival', 'Stadtcasino', 'Basel', '2023-02-21', 1540);
INSERT INTO concert VALUES (8, 'Winter Lights', 'Palau Hall', 'Barcelona', '2023-08-15', 880);

INSERT INTO performance VALUES (1, 6, 1);
INSERT INTO performance VALUES (2, 8, 0);
INSERT INTO performance VALUES (2, 12, 1);
INSERT INTO performance VALUES (3, 2, 0);
INSERT INTO performance VALUES (3, 6, 0);
INSERT INTO performance VALUES (3, 10, 0);
INSERT INTO performance VALUES (4, 3, 0);
INSERT INTO performance VALUES (4, 5, 0);
INSERT INTO performance VALUES (4, 11, 1);
INSERT INTO performance VALUES (5, 10, 0);
INSERT INTO performance VALUES (5, 11, 1);
INSERT INTO performance VALUES (5, 14, 1);
INSERT INTO performance VALUES (6, 2, 1);
INSERT INTO performance VALUES (6, 3, 0);
INSERT INTO performance VALUES (6, 7, 1);
INSERT INTO performance VALUES (7, 2, 1);
INSERT INTO performance VALUES (7, 3, 0);
INSERT INTO performance VALUES (7, 7, 0);
INSERT INTO performance VALUES (7, 9, 0);
INSERT INTO performance VALUES (7, 13, 0);
INSERT INTO performance VALUES (8, 1, 0);
INSERT INTO performance VALUES (8, 3, 0);
INSERT INTO performance VALUES (8, 4, 1);
INSERT INTO performance VALUES (8, 6, 0);
INSERT INTO performance VALUES (8, 10, 0);
INSERT INTO performance VALUES (8, 12, 0);
